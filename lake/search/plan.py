"""Stage 1: the plan. A plan is 1 to 4 steps; each step is a retrieval over vector similarity and/or
full text, narrowed by tags, kind, source and a time window. The request's filters apply to every
step. With no planner model the plan is one hybrid step over the whole query; with one (the
`planner` role assigned), the model composes the steps, and an answer that is not a usable plan
falls back to the default plan with the reason recorded."""

import json
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from fathom.llm import LLMError, Message, complete

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


def with_mode(plan: Plan, mode: str) -> Plan:
    """The plan with every step searching in `mode` (a request's vector-only or text-only search)."""
    return replace(plan, steps=tuple(replace(step, mode=mode) for step in plan.steps))


def with_filters(plan: Plan, filters: Filters) -> Plan:
    """The plan with the request's filters added to every step."""
    return replace(plan, steps=tuple(replace(step, filters=step.filters.merged(filters)) for step in plan.steps))


# --- the planner role --------------------------------------------------------------------------------

PLANNER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "search_plan", "schema": {
        "type": "object", "additionalProperties": False, "required": ["steps"],
        "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": {
            "type": "object", "additionalProperties": False, "required": ["query"],
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "mode": {"type": "string", "enum": list(MODES)},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string"},
                "since": {"type": ["string", "null"]},
                "until": {"type": ["string", "null"]},
            },
        }}},
    }},
}
PLANNER_PROMPT = """You plan searches of a memory lake of short time-stamped notes ("deltas").
Compose 1 to {max_steps} steps that together recall what the question needs. Each step is
{{"query": words to look for, "mode": "hybrid" (meaning and words, the usual choice) | "vector"
(meaning only) | "text" (exact words only), "tags": tags every hit must carry (e.g. "kind:note"),
"kind": a kind (the tag kind:<kind>), "since"/"until": an ISO 8601 time window or null}}.
Use one step for a plain question; split a question about several things into one step each.
It is now {now}. Answer as JSON: {{"steps": [...]}}."""


class PlanRejected(ValueError):
    """The planner's answer is not a usable plan (the message says why)."""


def planner_plan(*, workspace, query: str, now: datetime) -> Plan:
    """Ask the planner role for a plan. A failed call or a malformed answer falls back to the
    default plan, with the reason in the plan's note (the caller reports it)."""
    messages = [Message.system(PLANNER_PROMPT.format(max_steps=MAX_STEPS, now=now.isoformat(timespec="minutes"))),
                Message.user(query)]
    try:
        completion = complete(workspace=workspace, role="planner", messages=messages, response_format=PLANNER_SCHEMA,
                              actor_id="lake:search-planner")
    except LLMError as exc:
        return default_plan(query, note=f"the planner failed ({exc.message}); used the default plan")
    try:
        return parse_plan(completion.text)
    except PlanRejected as exc:
        return default_plan(query, note=f"the planner's plan was unusable ({exc}); used the default plan")


def parse_plan(text: str) -> Plan:
    """A Plan from the planner's JSON answer; PlanRejected says what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError:
        raise PlanRejected(f"not JSON: {text[:80]!r}") from None
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise PlanRejected(f"`steps` must be a list of 1 to {MAX_STEPS} steps")
    return Plan(steps=tuple(_parse_step(index, step) for index, step in enumerate(steps)), source="planner")


def _parse_step(index: int, step) -> Step:
    where = f"steps[{index}]"
    if not isinstance(step, dict):
        raise PlanRejected(f"{where} is not an object")
    query = " ".join(str(step.get("query") or "").split())
    if not query:
        raise PlanRejected(f"{where}.query is empty")
    mode = step.get("mode") or "hybrid"
    if mode not in MODES:
        raise PlanRejected(f"{where}.mode must be one of {', '.join(MODES)}, not {mode!r}")
    tags = step.get("tags") or []
    if not isinstance(tags, list) or any(not isinstance(tag, str) or not tag or " " in tag for tag in tags):
        raise PlanRejected(f"{where}.tags must be a list of tags without spaces")
    kind = step.get("kind") or ""
    if not isinstance(kind, str) or " " in kind:
        raise PlanRejected(f"{where}.kind must be one word")
    window = {}
    for name in ("since", "until"):
        value = step.get(name)
        if value in (None, ""):
            window[name] = None
            continue
        parsed = parse_datetime(str(value)) or (parse_datetime(f"{value}T00:00:00+00:00") if len(str(value)) == 10
                                                else None)
        if parsed is None:
            raise PlanRejected(f"{where}.{name} is not an ISO 8601 time: {value!r}")
        window[name] = parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)
    if window["since"] and window["until"] and window["since"] >= window["until"]:
        raise PlanRejected(f"{where}: since must be before until")
    return Step(query=query, mode=mode, filters=Filters(tags=tuple(tags), kind=kind, **window))
