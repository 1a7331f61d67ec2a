"""What the quality harness adds to what a wrapped fire's model reads: the contract's requirements
(seed 001's get_quality_preamble), the selected plan's modifier, the swarm's merged analysis and the
parallel subtasks' answers; for a retry, the earlier attempts' turns and the healing prompt."""

from fathom.llm import Message
from harness.fires.journal import JournalTurn
from harness.fires.models import Fire
from harness.fires.prompt import render_messages
from harness.quality import subtasks
from harness.quality.checks import contract_for
from harness.quality.contracts import MAX_SOURCE_INSIGHTS, ExpectedOutput, WorkflowType
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.run_state import FireQuality
from harness.runtime.models import HarnessSettings

SOURCE_COUNTED = (WorkflowType.SYNTHESIS, WorkflowType.FULL_PIPELINE)


def main_prompt(state: FireQuality, base: list, turns: list[JournalTurn],
                limits: HarnessSettings) -> tuple[list, list[JournalTurn]]:
    """The main loop's preamble with the harness's additions, and the journal's turns of the current
    attempt (a retry continues after the earlier attempts' turns, which its preamble shows)."""
    if state.run is None:
        return base, turns
    fire, first = state.fire, state.attempt.first_turn
    earlier, turns = turns[:first], turns[first:]
    rendered = render_messages(fire, earlier, history_limit=limits.history_messages, forced=False,
                               max_turns=limits.max_turns_per_fire, preamble=base) if earlier else base
    return _preamble(fire, state.run, state.attempt, base, earlier=rendered), turns


def _preamble(fire: Fire, run: QualityRun, attempt: QualityAttempt, base: list, *, earlier: list) -> list:
    """The main loop's preamble with the harness's additions: the quality requirements in the system
    message; for a retry, the earlier attempts' turns (`earlier`, rendered) and the healing prompt."""
    additions = [get_quality_preamble(fire, run)]
    plan = run.plan.get("plan")
    if plan:
        additions.append(f"# Plan (selected before you started)\n{plan['description']}"
                         + (f"\n{plan['prompt_modifier']}" if plan.get("prompt_modifier") else ""))
    system = Message.system("\n\n".join([base[0].content, *additions]))
    briefs = []  # what ran before the main pass: the swarm's aggregate, the parallel subtasks' answers
    if run.swarm.get("aggregate"):
        briefs.append(Message.note(f"the specialist swarm's analysis of the sources, merged:\n"
                                   f"{run.swarm['aggregate']}"))
    answers = subtasks.answers_message(run)
    if answers is not None:
        briefs.append(answers)
    if attempt.healing_prompt:  # a retry keeps the briefs, before the earlier attempts' turns
        return [system, *briefs, *earlier[1:], Message.note(attempt.healing_prompt)]
    return [system, *base[1:], *briefs]


def get_quality_preamble(fire: Fire, run: QualityRun) -> str:
    """The contract's requirements, as the model is told them before it answers."""
    contract = contract_for(fire, run)
    lines = ["# Quality requirements (your answer is checked against them before it reaches the user)"]
    if contract.min_output_chars:
        lines.append(f"- An answer of at least {contract.min_output_chars} characters.")
    per_source = (contract.workflow_type in SOURCE_COUNTED
                  and ExpectedOutput.from_dict(run.complexity.get("expected")).min_insights is None)
    if per_source:  # the minimum follows the sources the answer cites (checks.contract_evaluate)
        lines.append(f"- One insight card per source you cite (at least {contract.min_insights}, at most "
                     f"{MAX_SOURCE_INSIGHTS}): respond(cards=[{{\"kind\": \"insight\", \"title\": ..., \"body\": ..., "
                     "\"citations\": [{\"id\": ..., \"quote\": ...}]}]).")
    for noun, minimum in (("insight", contract.min_insights), ("recommendation", contract.min_recommendations),
                          ("document", contract.min_documents)):
        if minimum and not (per_source and noun == "insight"):
            lines.append(f"- At least {minimum} {noun} card(s): respond(cards=[{{\"kind\": \"{noun}\", "
                         f"\"title\": ..., \"body\": ..., \"citations\": [{{\"id\": ..., \"quote\": ...}}]}}]).")
    if contract.require_citations:
        lines.append("- Cite your sources: each insight cites the ids it rests on, quoting them word for word; "
                     "cite only ids a tool returned to you in this fire.")
    if contract.require_artifacts and not (contract.min_insights or contract.min_recommendations
                                           or contract.min_documents):
        lines.append("- At least one card (an insight, a recommendation or a document).")
    return "\n".join(lines)
