"""The quality scores a user sees after a fire: RQS (synthesis), RecQS (recommendation), DocQS
(drafting). Deterministic, from what the post-flight already measured:

    contract   = the contract's score (the fraction of its checks passed)
    verifier   = the verifier's score (the contrastive minimum when it ran), clamped to [0, 1]
    grounding  = founded / given citations; with none given, 0 where the contract requires
                 citations and 1 elsewhere (nothing unfounded)

    score = w_contract * contract + w_verifier * verifier + w_grounding * grounding

| score | contract | verifier | grounding |
|---|---|---|---|
| RQS (synthesis: evidence is the point) | 0.30 | 0.40 | 0.30 |
| RecQS (recommendation) | 0.35 | 0.50 | 0.15 |
| DocQS (drafting) | 0.40 | 0.50 | 0.10 |

A failed contract caps the score at 0.69 (a D at best): a missing requirement is never "good".
Scores are rounded to 3 decimals. Grade and label: A >= 0.90 Excellent, B >= 0.80 Good,
C >= 0.70 Acceptable, D >= 0.60 Weak, F below: Poor."""

from dataclasses import dataclass, field

from harness.quality.contracts import CitationCheck, ContractResult, WorkflowType

FAILED_CONTRACT_CAP = 0.69
WEIGHTS = {
    "harness_rqs": {"contract": 0.30, "verifier": 0.40, "grounding": 0.30},
    "harness_rec_qs": {"contract": 0.35, "verifier": 0.50, "grounding": 0.15},
    "harness_doc_qs": {"contract": 0.40, "verifier": 0.50, "grounding": 0.10},
}
GRADES = ((0.90, "A", "Excellent"), (0.80, "B", "Good"), (0.70, "C", "Acceptable"), (0.60, "D", "Weak"),
          (0.0, "F", "Poor"))
# The events each workflow type's fire emits; full_pipeline produces all three kinds of artifact.
EVENTS_BY_WORKFLOW = {
    WorkflowType.SYNTHESIS: ("harness_rqs",),
    WorkflowType.RECOMMENDATION: ("harness_rec_qs",),
    WorkflowType.DRAFTING: ("harness_doc_qs",),
    WorkflowType.FULL_PIPELINE: ("harness_rqs", "harness_rec_qs", "harness_doc_qs"),
}


@dataclass(frozen=True)
class QualityScore:
    score: float
    grade: str
    label: str
    breakdown: dict = field(default_factory=dict)  # per component: value, weight, points; and the cap

    def as_event(self) -> dict:
        return {"score": self.score, "grade": self.grade, "label": self.label, "breakdown": self.breakdown}


def harness_rqs(*, contract: ContractResult, verifier_score: float,
                citations: CitationCheck | None = None) -> QualityScore:
    return _quality_score("harness_rqs", contract=contract, verifier_score=verifier_score, citations=citations)


def harness_rec_qs(*, contract: ContractResult, verifier_score: float,
                   citations: CitationCheck | None = None) -> QualityScore:
    return _quality_score("harness_rec_qs", contract=contract, verifier_score=verifier_score, citations=citations)


def harness_doc_qs(*, contract: ContractResult, verifier_score: float,
                   citations: CitationCheck | None = None) -> QualityScore:
    return _quality_score("harness_doc_qs", contract=contract, verifier_score=verifier_score, citations=citations)


def quality_scores(workflow_type: str, *, contract: ContractResult, verifier_score: float,
                   citations: CitationCheck | None = None) -> dict[str, QualityScore]:
    """{event name: score} for the events this workflow emits (none for chat)."""
    return {event: _quality_score(event, contract=contract, verifier_score=verifier_score, citations=citations)
            for event in EVENTS_BY_WORKFLOW.get(str(workflow_type), ())}


def grade_of(score: float) -> tuple[str, str]:
    return next((grade, label) for floor, grade, label in GRADES if score >= floor)


def _quality_score(event: str, *, contract: ContractResult, verifier_score: float,
                   citations: CitationCheck | None) -> QualityScore:
    citations = citations or CitationCheck()
    if citations.total:
        grounding = citations.founded / citations.total
    else:
        grounding = 0.0 if contract.contract.require_citations else 1.0
    values = {"contract": contract.score, "verifier": min(1.0, max(0.0, float(verifier_score))),
              "grounding": grounding}
    weights = WEIGHTS[event]
    breakdown = {name: {"value": round(values[name], 3), "weight": weight, "points": round(values[name] * weight, 3)}
                 for name, weight in weights.items()}
    score = sum(values[name] * weight for name, weight in weights.items())
    capped = not contract.passed and score > FAILED_CONTRACT_CAP
    if capped:
        score = FAILED_CONTRACT_CAP
    breakdown["capped_by_failed_contract"] = capped
    score = round(score, 3)
    grade, label = grade_of(score)
    return QualityScore(score=score, grade=grade, label=label, breakdown=breakdown)
