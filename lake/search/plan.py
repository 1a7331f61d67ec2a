"""Stage 1: the plan. A plan is 1 to 4 steps; each step is a retrieval over vector similarity and/or
full text, narrowed by tags, kind, source and a time window. The request's filters apply to every
step. With no planner model the plan is one hybrid step over the whole query."""

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime

MODES = ("hybrid", "vector", "text")
MAX_STEPS = 4


@dataclass(frozen=True)
class Filters:
    tags: tuple[str, ...] = ()
    kind: str = ""
    source: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def merged(self, other: "Filters") -> "Filters":
        """Both filters at once (the narrower time window, all tags)."""
        return Filters(
            tags=tuple(dict.fromkeys(self.tags + other.tags)),
            kind=other.kind or self.kind,
            source=other.source or self.source,
            since=max((t for t in (self.since, other.since) if t), default=None),
            until=min((t for t in (self.until, other.until) if t), default=None),
        )


@dataclass(frozen=True)
class Step:
    query: str
    mode: str = "hybrid"
    filters: Filters = field(default_factory=Filters)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["filters"] = {key: (value.isoformat() if isinstance(value, datetime) else value)
                           for key, value in data["filters"].items() if value not in ((), "", None)}
        return data


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    source: str = "default"  # "default" (no planner model), "planner" (the planner role), "given"
    note: str = ""  # why the default plan was used when the planner was asked

    def as_dict(self) -> dict:
        return {"source": self.source, "steps": [step.as_dict() for step in self.steps],
                **({"note": self.note} if self.note else {})}


def default_plan(query: str, *, note: str = "") -> Plan:
    """One hybrid step over the whole query: what recall does with no planner model."""
    return Plan(steps=(Step(query=query, mode="hybrid"),), source="default", note=note)


def with_filters(plan: Plan, filters: Filters) -> Plan:
    """The plan with the request's filters added to every step."""
    return replace(plan, steps=tuple(replace(step, filters=step.filters.merged(filters)) for step in plan.steps))
