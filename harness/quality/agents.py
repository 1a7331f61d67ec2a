"""The quality harness's model-calling agents (seed 001), each one `complete` call by role, each with
a documented deterministic fallback, so none of them ever raises:

    classify              role classifier   1 call   SIMPLE | MEDIUM | COMPLEX, workflow type, ExpectedOutput
    plans_generate        role planner      1 call   2-3 candidate plans (COMPLEX only)
    verify                role verifier     1 call   passed / score / issues / feedback, fresh context
                                                     (perspective standard, or accuracy / completeness /
                                                     usefulness for contrastive verification)
    specialist_analyse    role specialist   1 call   one angle of the swarm over the sources
    aggregate             role aggregator   1 call   the specialists merged into the main pass's brief

With the offline provider (no key) each role answers deterministically through `OfflineQuality`,
and says so ("[offline]"), so a new user sees every event."""

import json
import logging
import re

import jsonschema

from fathom.llm import LLMError, Message, complete
from fathom.llm.offline import OFFLINE_NOTICE
from harness.quality.models import WORKFLOWS
from harness.quality.prompts import prompt_get

logger = logging.getLogger(__name__)

LEVELS = ("SIMPLE", "MEDIUM", "COMPLEX")
PERSPECTIVES = ("accuracy", "completeness", "usefulness")
QUERY_CHARS, OUTPUT_CHARS = 500, 8000
PASSAGES, PASSAGE_CHARS = 10, 500  # the cited passages a verifier reads: the first 10 cited ids, 500 chars each
BRIEF_CHARS = QUERY_CHARS + OUTPUT_CHARS + PASSAGES * PASSAGE_CHARS  # 13,500: the most a verifier reads
NO_PASSAGE = "(no such delta"  # how a passage the workspace does not hold reads
FALLBACK = "[is_fallback]"

CLASSIFICATION_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["level", "reason", "subtask_count", "workflow_type", "expected"],
    "properties": {
        "level": {"type": "string", "enum": list(LEVELS)},
        "reason": {"type": "string"},
        "subtask_count": {"type": "integer", "minimum": 1, "maximum": 8},
        "workflow_type": {"type": "string", "enum": list(WORKFLOWS)},
        "expected": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "min_insights": {"type": "integer", "minimum": 0, "maximum": 20},
                "min_recommendations": {"type": "integer", "minimum": 0, "maximum": 20},
                "min_documents": {"type": "integer", "minimum": 0, "maximum": 10},
                "require_citations": {"type": "boolean"},
            },
        },
    },
}
PLANS_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["plans"],
    "properties": {"plans": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
        "type": "object", "additionalProperties": False,
        "required": ["description", "prompt_modifier", "subtasks", "estimated_turns", "suggested_workflow"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "prompt_modifier": {"type": "string"},
            "subtasks": {"type": "array", "maxItems": 6, "items": {
                "type": "object", "required": ["title"], "additionalProperties": False,
                "properties": {"title": {"type": "string", "minLength": 1}, "parallel": {"type": "boolean"}}}},
            "estimated_turns": {"type": "integer", "minimum": 1, "maximum": 20},
            "suggested_workflow": {"type": "string", "enum": list(WORKFLOWS)},
        }}}},
}
VERDICT_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["passed", "score", "issues", "feedback"],
    "properties": {
        "passed": {"type": "boolean"}, "score": {"type": "number", "minimum": 0, "maximum": 1},
        "issues": {"type": "array", "items": {"type": "string"}}, "feedback": {"type": "string"},
    },
}


def _format(name: str, schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


# --- pre-flight ---------------------------------------------------------------------------------------------

def classify(*, workspace, question: str, system: str = "") -> dict:
    """The question's complexity: {level, reason, subtask_count, workflow_type, expected, is_fallback}.
    One classifier call, its answer validated against CLASSIFICATION_SCHEMA; any failure (the model
    down, invalid JSON, a schema violation) gives `classify_fallback`'s answer, marked is_fallback.
    `system`: the prompt classifier_system, when the caller read it already."""
    try:
        completion = complete(workspace=workspace, role="classifier", response_format=_format(
            "complexity", CLASSIFICATION_SCHEMA), offline_policy=OfflineQuality("classifier"), messages=[
            Message.system(system or prompt_get("classifier_system")), Message.user(question[:4000])])
        answer = _validated(completion.text, CLASSIFICATION_SCHEMA)
    except (LLMError, ValueError, jsonschema.ValidationError) as exc:
        logger.info("classifier fell back: %s", exc)
        return {**classify_fallback(question), "is_fallback": True, "error": str(exc)[:300]}
    return {**answer, "is_fallback": False}


def classify_fallback(question: str) -> dict:
    """The deterministic classification: the workflow from keywords (recommend -> recommendation,
    draft/write -> drafting, report with recommendations -> full_pipeline, synthesise/compare/themes
    -> synthesis, else chat); COMPLEX for a synthesis or full pipeline asked at length (over 20
    words) or across things (compare, across, all, themes), MEDIUM for any other non-chat workflow
    or a chat question over 40 words, else SIMPLE."""
    text = question.lower()
    words = len(text.split())
    if re.search(r"\b(full pipeline|report with recommendations|end[- ]to[- ]end report)\b", text):
        workflow = "full_pipeline"
    elif re.search(r"\b(recommend\w*|should (i|we)|suggest\w*|advice)\b", text):
        workflow = "recommendation"
    elif re.search(r"\b(draft|write (a|an|the|me)|compose|memo|letter)\b", text):
        workflow = "drafting"
    elif re.search(r"\b(synthes\w*|summari[sz]\w*|compare|comparison|connections?|themes?|patterns?|insights?)\b",
                   text):
        workflow = "synthesis"
    else:
        workflow = "chat"
    broad = bool(re.search(r"\b(compare|across|all|themes?|connections?|everything)\b", text))
    if workflow in ("synthesis", "full_pipeline") and (words > 20 or broad):
        level = "COMPLEX"
    elif workflow != "chat" or words > 40:
        level = "MEDIUM"
    else:
        level = "SIMPLE"
    subtasks = {"SIMPLE": 1, "MEDIUM": 2, "COMPLEX": 3}[level]
    return {"level": level, "reason": f"keywords: a {workflow} question of {words} words", "subtask_count": subtasks,
            "workflow_type": workflow, "expected": {"require_citations": workflow in ("synthesis", "full_pipeline")}}


def plans_generate(*, workspace, question: str, complexity: dict) -> list[dict]:
    """2-3 candidate plans from one planner call, validated; [] when the planner fails (the selector
    then takes its default plan)."""
    try:
        completion = complete(workspace=workspace, role="planner", response_format=_format("plans", PLANS_SCHEMA),
                              offline_policy=OfflineQuality("planner", complexity=complexity), messages=[
                                  Message.system(prompt_get("planner_system")),
                                  Message.user(f"Question: {question[:4000]}\n\nClassified as {complexity['level']} "
                                               f"{complexity['workflow_type']}: {complexity.get('reason', '')}")])
        return _validated(completion.text, PLANS_SCHEMA)["plans"]
    except (LLMError, ValueError, jsonschema.ValidationError) as exc:
        logger.info("planner failed: %s", exc)
        return []


# --- post-flight ----------------------------------------------------------------------------------------------

def verify(*, workspace, perspective: str, query: str, output: str, artifact_summary: str,
           passages: tuple | list = (), calibration: str = "", system: str = "") -> dict:
    """One verifier's verdict {passed, score, issues, feedback, is_fallback}, with fresh context: the
    query's first 500 characters, the output's first 8,000, the artifact summary, and the passages the
    answer cites (at most PASSAGES of PASSAGE_CHARS each: BRIEF_CHARS in all), nothing else of the
    workspace's data, so its verdict on the citations can agree with the deterministic check. `perspective` is "standard" (prompt verifier_system, which carries the
    workspace's calibration) or a contrastive one (verifier_accuracy, ...); `system`: that prompt, when
    the caller read it already. On any failure: passed False, score 0.0, feedback "[is_fallback] ...",
    so the retry gates still trigger."""
    system = system or prompt_get(verifier_prompt_id(perspective))
    if calibration:
        system += ("\n\nCalibration from this workspace's feedback (adjust scoring for similar patterns):\n"
                   + calibration)
    user = (f"Query:\n{query[:QUERY_CHARS]}\n\nAnswer:\n{output[:OUTPUT_CHARS]}\n\n"
            f"Artifacts created: {artifact_summary or 'none'}")
    if passages:
        user += "\n\nCited passages (what the cited ids hold; check the answer's claims and quotes against them):\n" + \
            "\n".join(f"[{p['id']}] {str(p['passage'])[:PASSAGE_CHARS]}" for p in list(passages)[:PASSAGES])
    try:
        completion = complete(workspace=workspace, role="verifier", response_format=_format("verdict", VERDICT_SCHEMA),
                              offline_policy=OfflineQuality("verifier", perspective=perspective), fresh_context=True,
                              messages=[Message.system(system), Message.user(user)])
        verdict = _validated(completion.text, VERDICT_SCHEMA)
    except (LLMError, ValueError, jsonschema.ValidationError) as exc:
        return {"passed": False, "score": 0.0, "issues": [], "is_fallback": True,
                "feedback": f"{FALLBACK} the {perspective} verifier could not run: {str(exc)[:300]}"}
    return {"passed": bool(verdict["passed"]), "score": float(verdict["score"]),
            "issues": [str(i) for i in verdict["issues"]], "feedback": verdict["feedback"], "is_fallback": False}


def verifier_prompt_id(perspective: str) -> str:
    return "verifier_system" if perspective == "standard" else f"verifier_{perspective}"


def contrastive_combine(verdicts: dict[str, dict]) -> dict:
    """The contrastive verdict: the minimum score of the perspectives, passed only if all passed,
    every issue tagged with its perspective ("[accuracy] ...")."""
    ordered = [(name, verdicts[name]) for name in PERSPECTIVES if name in verdicts]
    if not ordered:
        return {"passed": False, "score": 0.0, "issues": [], "is_fallback": True,
                "feedback": f"{FALLBACK} no contrastive verifier answered"}
    return {
        "passed": all(v["passed"] for _, v in ordered), "score": min(v["score"] for _, v in ordered),
        "issues": [f"[{name}] {issue}" for name, v in ordered for issue in v["issues"]],
        "feedback": " ".join(f"[{name}] {v['feedback']}" for name, v in ordered if v["feedback"]),
        "is_fallback": any(v.get("is_fallback") for _, v in ordered),
        "contrastive": {name: v["score"] for name, v in ordered},
    }


# --- the swarm ----------------------------------------------------------------------------------------------

def specialist_analyse(*, workspace, angle: str, question: str, sources: list[dict]) -> tuple[str, float]:
    """One specialist's analysis from `angle`, and its cost (raises LLMError: the swarm tolerates a
    failed one)."""
    completion = complete(workspace=workspace, role="specialist",
                          offline_policy=OfflineQuality("specialist", angle=angle, sources=sources), messages=[
                              Message.system(prompt_get("specialist_system").replace("{angle}", angle)),
                              Message.user(f"Question: {question[:4000]}\n\nSources:\n{render_sources(sources)}")])
    return completion.text, float(completion.cost)


def aggregate(*, workspace, question: str, analyses: dict[str, str]) -> tuple[str, float]:
    """The specialists' analyses merged into one brief, and its cost (raises LLMError: the main pass
    then runs without the swarm)."""
    body = "\n\n".join(f"## {angle}\n{text}" for angle, text in analyses.items())
    completion = complete(workspace=workspace, role="aggregator", offline_policy=OfflineQuality("aggregator"),
                          messages=[Message.system(prompt_get("aggregator_system")),
                                    Message.user(f"Question: {question[:4000]}\n\n{body}")])
    return completion.text, float(completion.cost)


def render_sources(sources: list[dict]) -> str:
    return "\n".join(f"[{s['id']}] {' '.join(str(s.get('content', '')).split())[:600]}" for s in sources)


def _validated(text: str, schema: dict) -> dict:
    match = re.search(r"\{.*\}", text or "", re.DOTALL)  # models wrap JSON in prose or fences now and then
    data = json.loads(match.group(0) if match else text)
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
    if error is not None:
        raise error
    return data


_VALIDATORS: dict[int, object] = {}


def _validator(schema: dict):
    # Built once per schema (the module's constants, so keyed by identity): jsonschema.validate checks
    # the schema itself again on every call, which costs more than validating the answer.
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = _VALIDATORS[id(schema)] = jsonschema.validators.validator_for(schema)(schema)
    return validator


# --- offline ------------------------------------------------------------------------------------------------

class OfflineQuality:
    """The offline provider's answers for the quality roles: deterministic, and saying they are
    offline. classifier: `classify_fallback`; planner: two fixed plans for the workflow; verifier:
    a heuristic score (0.3 when a cited passage is not in the workspace, else 0.8 for an answer of
    200+ characters or with a cited [id], 0.6 otherwise);
    specialist: the sources' ids and first words from its angle; aggregator: the analyses joined."""

    without_tools = True  # fathom.llm.offline applies this policy to requests without tools too

    def __init__(self, role: str, **context):
        self.role, self.context = role, context

    def next_step(self, request) -> str:
        text = request.last_user_text
        if self.role == "classifier":
            return json.dumps(classify_fallback(text))
        if self.role == "planner":
            workflow = self.context["complexity"]["workflow_type"]
            return json.dumps({"plans": [
                {"description": f"{OFFLINE_NOTICE} search broadly, then {workflow} over what was found",
                 "prompt_modifier": "Search the lake broadly before answering; cite every id you use.",
                 "subtasks": [{"title": "search the lake", "parallel": False},
                              {"title": f"write the {workflow}", "parallel": False}],
                 "estimated_turns": 4, "suggested_workflow": workflow},
                {"description": f"{OFFLINE_NOTICE} answer {workflow} directly from the first search",
                 "prompt_modifier": "Answer from one search.", "subtasks": [{"title": "answer", "parallel": False}],
                 "estimated_turns": 2, "suggested_workflow": "chat"},
            ]})
        if self.role == "verifier":
            answer = text.partition("\n\nAnswer:\n")[2].rpartition("\n\nArtifacts created:")[0]
            missing = [line.partition("]")[0].lstrip("[") for line in text.partition("\n\nCited passages")[2].splitlines()
                       if NO_PASSAGE in line]
            good = len(answer) >= 200 or bool(re.search(r"\[[0-9a-f]{6,32}\]", answer))
            score = 0.3 if missing else 0.8 if good else 0.6
            issues = [f"cites [{i}], which is not in the workspace" for i in missing] or (
                [] if good else ["short answer without citations"])
            return json.dumps({"passed": score >= 0.6, "score": score, "issues": issues,
                               "feedback": f"{OFFLINE_NOTICE} verified without a language model "
                                           f"({self.context['perspective']}): heuristic checks only"})
        if self.role == "specialist":
            sources = self.context["sources"]
            lines = [f"- [{s['id']}] {' '.join(str(s.get('content', '')).split()[:12])}" for s in sources]
            return f"{OFFLINE_NOTICE} {self.context['angle']}: {len(sources)} source(s)\n" + "\n".join(lines)
        return f"{OFFLINE_NOTICE} aggregate of the swarm (no language model):\n{text.partition(chr(10) * 2)[2]}"
