"""The prompt registry (seed 001's PromptRegistry): every prompt the quality harness sends a model,
by id, with a built-in default; a QualityPrompt row of the same id (edited in admin) overrides it."""

from harness.quality.models import QualityPrompt

DEFAULTS = {
    "classifier_system": (
        "You classify a question before an agent answers it. Answer as JSON with: level (SIMPLE: one fact or a "
        "chat reply; MEDIUM: a few lookups; COMPLEX: synthesis over many sources, comparison, a multi-part "
        "deliverable), reason (one sentence), subtask_count (1-8), workflow_type (chat, synthesis, "
        "recommendation, drafting, full_pipeline) and expected (min_insights, min_recommendations, "
        "min_documents, require_citations: what a complete answer must contain; 0 / false when unsure)."),
    "planner_system": (
        "You plan how an agent answers a complex question over its memory. Propose 2 or 3 different candidate "
        "plans as JSON {\"plans\": [...]}, each with description, prompt_modifier (one instruction for the agent), "
        "subtasks (2-5 short steps, each {title, parallel}), estimated_turns (1-12) and suggested_workflow "
        "(chat, synthesis, recommendation, drafting, full_pipeline)."),
    "verifier_system": (
        "You are an independent reviewer with fresh context. You see only the user's query, the agent's "
        "answer and a summary of what it created; you have no access to its sources. Judge whether the answer "
        "fully, correctly and usefully addresses the query. Answer as JSON: passed (bool), score (0 to 1), "
        "issues (short strings), feedback (one or two sentences the agent could act on)."),
    "verifier_accuracy": (
        "You review an answer for ACCURACY only: is every claim supported by evidence or a cited source, with "
        "nothing invented? Answer as JSON: passed, score (0 to 1), issues, feedback."),
    "verifier_completeness": (
        "You review an answer for COMPLETENESS only: does it address every part of the query? Answer as JSON: "
        "passed, score (0 to 1), issues, feedback."),
    "verifier_usefulness": (
        "You review an answer for USEFULNESS only: is it clear, specific and actionable for the person who "
        "asked? Answer as JSON: passed, score (0 to 1), issues, feedback."),
    "specialist_system": (
        "You are one specialist of a swarm analysing the same sources from one angle: {angle}. Read the "
        "sources and write what your angle reveals, citing source ids as [id]. Be brief and concrete."),
    "aggregator_system": (
        "You merge the specialists' analyses of the same sources into one brief for the agent who will answer "
        "the question: keep every supported finding with its [id] citations, resolve overlaps, flag "
        "disagreements."),
}


def prompt_get(prompt_id: str) -> str:
    """The prompt `prompt_id`: the admin's override when there is one, else the built-in default."""
    return prompt_or_default(prompt_id, QualityPrompt.objects.filter(prompt_id=prompt_id).values_list(
        "text", flat=True).first())


def prompt_override_sql() -> str:
    """The admin's override of the prompt whose id is its one param (or NULL), as a scalar subquery to read
    along with another row, then hand to prompt_or_default."""
    return f"(SELECT text FROM {QualityPrompt._meta.db_table} WHERE prompt_id = %s)"


def prompt_or_default(prompt_id: str, override: str | None) -> str:
    if override and override.strip():
        return override
    return DEFAULTS[prompt_id]
