"""Plan selection (seed 001): the planner's 2-3 candidate plans for a COMPLEX query, scored without a
model call on the seed's four dimensions, the best one chosen.

    total = 0.35 * coverage + 0.25 * feasibility + 0.20 * efficiency + 0.20 * alignment

- coverage: the share of the query's keywords (stemmed content words, `lake.words.stems`) found in
  the plan's description + prompt modifier; 0 when the query has no keyword.
- feasibility: whether the workspace holds what the plan's suggested workflow needs. Sources are
  the deltas that are neither provenance nor an artifact (insight, recommendation, document):
  synthesis and full_pipeline score min(1, sources / 5); recommendation 1 with an insight in the
  lake, 0.5 with sources only (it can synthesise first), else 0; drafting 1 with any delta, else
  0.5; chat 1; an unknown workflow 0.5.
- efficiency: 1 / estimated_turns, turns clamped to >= 1.
- alignment: 1 when the plan's suggested workflow is the classified workflow type, else 0.

Ties are broken deterministically: the higher total (compared at 9 decimals), then the fewer
estimated turns, then the earlier candidate in the planner's order. Any error (no candidates, a
malformed one) yields the one default plan "Execute {workflow_type} workflow directly"."""

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from harness.quality.contracts import ArtifactKind, WorkflowType
from harness.quality.selectors import WorkspaceStats
from lake.words import stems

WEIGHTS = {"coverage": 0.35, "feasibility": 0.25, "efficiency": 0.20, "alignment": 0.20}
SOURCES_FOR_FULL_FEASIBILITY = 5
TIE_DECIMALS = 9


@dataclass(frozen=True)
class Subtask:
    title: str
    parallel: bool = False  # may run alongside the other parallel subtasks of its layer


@dataclass(frozen=True)
class Plan:
    description: str
    prompt_modifier: str = ""
    subtasks: tuple[Subtask, ...] = ()
    estimated_turns: int = 1
    suggested_workflow: str = ""

    @classmethod
    def from_dict(cls, data: Mapping) -> "Plan":
        """From the planner's JSON (validated against its schema); raises on a malformed plan."""
        subtasks = tuple(Subtask(title=str(item["title"]), parallel=bool(item.get("parallel", False)))
                         if isinstance(item, Mapping) else Subtask(title=str(item))
                         for item in data.get("subtasks") or ())
        return cls(description=str(data["description"]), prompt_modifier=str(data.get("prompt_modifier") or ""),
                   subtasks=subtasks, estimated_turns=int(data.get("estimated_turns") or 1),
                   suggested_workflow=str(data.get("suggested_workflow") or ""))

    @classmethod
    def default(cls, workflow_type: str) -> "Plan":
        return cls(description=f"Execute {workflow_type} workflow directly", estimated_turns=1,
                   suggested_workflow=str(workflow_type))

    def as_dict(self) -> dict:
        return asdict(self) | {"subtasks": [asdict(subtask) for subtask in self.subtasks]}


@dataclass(frozen=True)
class PlanScore:
    coverage: float
    feasibility: float
    efficiency: float
    alignment: float

    @property
    def total(self) -> float:
        return round(sum(WEIGHTS[name] * getattr(self, name) for name in WEIGHTS), TIE_DECIMALS)

    def as_dict(self) -> dict:
        return {**{name: round(getattr(self, name), 4) for name in WEIGHTS}, "total": round(self.total, 4)}


@dataclass(frozen=True)
class PlanSelection:
    plan: Plan
    score: float  # the chosen plan's total; 0 for the default plan
    scores: list[dict] = field(default_factory=list)  # per candidate, in the planner's order
    candidates_count: int = 0
    fallback: bool = False
    error: str = ""

    def as_event(self) -> dict:
        """The harness_plan_selected event's fields (and each candidate's scores)."""
        return {"plan": self.plan.as_dict(), "score": self.score, "candidates_count": self.candidates_count,
                "scores": self.scores, "fallback": self.fallback}


class PlanSelector:
    @staticmethod
    def select(plans: Sequence[Plan | Mapping], *, query: str, workflow_type: str,
               workspace_stats: WorkspaceStats) -> PlanSelection:
        """The best candidate and every candidate's scores; never raises (see the module docstring)."""
        count = len(plans) if isinstance(plans, Sequence) else 0
        try:
            candidates = [plan if isinstance(plan, Plan) else Plan.from_dict(plan) for plan in plans]
            if not candidates:
                raise ValueError("no candidate plans")
            scored = [(plan_score(plan, query=query, workflow_type=workflow_type, workspace_stats=workspace_stats),
                       index, plan) for index, plan in enumerate(candidates)]
            best_score, _, best = min(scored, key=lambda item: (-item[0].total, max(1, item[2].estimated_turns),
                                                                item[1]))
            return PlanSelection(plan=best, score=round(best_score.total, 4), scores=[s.as_dict() for s, _, _ in scored],
                                 candidates_count=count)
        except Exception as exc:  # noqa: BLE001 - the seed's promise: any error means the default plan
            return PlanSelection(plan=Plan.default(workflow_type), score=0.0, candidates_count=count, fallback=True,
                                 error=f"{type(exc).__name__}: {exc}")


def plan_score(plan: Plan, *, query: str, workflow_type: str, workspace_stats: WorkspaceStats) -> PlanScore:
    return PlanScore(coverage=coverage(query, plan), feasibility=feasibility(plan.suggested_workflow, workspace_stats),
                     efficiency=1.0 / max(1, plan.estimated_turns),
                     alignment=1.0 if _same_workflow(plan.suggested_workflow, workflow_type) else 0.0)


def coverage(query: str, plan: Plan) -> float:
    keywords = set(stems(query))
    if not keywords:
        return 0.0
    return len(keywords & set(stems(f"{plan.description} {plan.prompt_modifier}"))) / len(keywords)


def feasibility(workflow: str, stats: WorkspaceStats) -> float:
    kind = str(workflow).strip().lower()
    derived = sum(stats.kinds.get(artifact, 0) for artifact in ArtifactKind)
    sources = max(0, stats.delta_count - stats.provenance_count - derived)
    if kind in (WorkflowType.SYNTHESIS, WorkflowType.FULL_PIPELINE):
        return min(1.0, sources / SOURCES_FOR_FULL_FEASIBILITY)
    if kind == WorkflowType.RECOMMENDATION:
        return 1.0 if stats.kinds.get(ArtifactKind.INSIGHT, 0) else 0.5 if sources else 0.0
    if kind == WorkflowType.DRAFTING:
        return 1.0 if stats.delta_count else 0.5
    if kind == WorkflowType.CHAT:
        return 1.0
    return 0.5


def _same_workflow(suggested: str, workflow_type: str) -> bool:
    return str(suggested).strip().lower() == str(workflow_type).strip().lower()
