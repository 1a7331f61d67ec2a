"""What the lens tools (state, pattern, time, relate) share: a lens is a tool with an `action`
argument; `action="help"` lists its sub-actions and their arguments. Each sub-action is a real
query over the lake (or the session), rendered whole with every delta's [<id>] so the model can
cite it, expand it or look at it through another lens."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from fathom.errors import ApplicationError
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import delta_get, deltas_list

TIME_FORMAT = "%Y-%m-%d %H:%M"
DEFAULT_LIMIT = 20
_RELATIVE = re.compile(r"^-?(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

# The arguments any sub-action may read, described once for every lens's schema.
PARAMETERS = {
    "since": {"type": "string", "description": "start: ISO date/time, or relative like 7d, 24h, 30m, 2w (ago)"},
    "until": {"type": "string", "description": "end (exclusive): ISO date/time or relative; default now"},
    "days": {"type": "integer", "minimum": 1, "maximum": 3650, "description": "the window: the last N days"},
    "kind": {"type": "string", "description": "only deltas of this kind (kind:<kind>)"},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "only deltas carrying all these tags"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": DEFAULT_LIMIT},
    "delta_id": {"type": "string", "description": "a delta id (or a unique prefix of 8+ characters)"},
    "other_id": {"type": "string", "description": "a second delta id"},
    "at": {"type": "string", "description": "a moment: ISO date/time or relative"},
    "minutes": {"type": "integer", "minimum": 1, "maximum": 525600, "description": "half-width of a window"},
    "unit": {"type": "string", "enum": ["hour", "day", "week", "month"]},
    "by": {"type": "string", "description": "what to group by: kind, source, or a tag prefix (axis, tool, ...)"},
    "contact": {"type": "string", "description": "a person or agent: contact:<name> tags or the source"},
    "river": {"type": "boolean", "description": "only this conversation's river (its session tag)"},
}


@dataclass(frozen=True)
class Action:
    name: str
    summary: str
    run: Callable[[ToolContext, dict], str]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


def lens(*, name: str, description: str, actions: list[Action]) -> Tool:
    """Register a lens tool over `actions`; its schema holds the arguments its actions read."""
    by_name = {action.name: action for action in actions}
    used = sorted({p for action in actions for p in (*action.required, *action.optional)})

    def run(ctx: ToolContext, args: dict):
        action = args["action"]
        if action == "help":
            return help_text(name, actions)
        chosen = by_name[action]
        missing = [p for p in chosen.required if args.get(p) in (None, "", [])]
        if missing:
            raise ToolError(f"{name}(action={action!r}) needs {', '.join(missing)}; "
                            f"see {name}(action=\"help\")")
        ignored = sorted(set(args) - {"action", *chosen.required, *chosen.optional})
        result = chosen.run(ctx, args)
        if ignored:
            result += f"\n(note: {action} ignores {', '.join(ignored)})"
        return result

    return register(Tool(
        name=name, description=f"{description} Call with action=\"help\" to list its actions.", run=run,
        transactional=False,
        parameters={"type": "object", "required": ["action"], "additionalProperties": False, "properties": {
            "action": {"type": "string", "enum": ["help", *by_name]},
            **{p: PARAMETERS[p] for p in used},
        }},
    ))


def help_text(name: str, actions: list[Action]) -> str:
    lines = [f"{name} actions:"]
    for action in actions:
        params = [*action.required, *(f"[{p}]" for p in action.optional)]
        lines.append(f"- {action.name}({', '.join(params)}): {action.summary}")
    lines.append("Times: ISO (2026-05-04, 2026-05-04T10:00) or relative to now (30m, 24h, 7d, 2w).")
    return "\n".join(lines)


# --- arguments -------------------------------------------------------------------------------------------

def moment(value: str | None, *, field: str, default: datetime | None = None) -> datetime | None:
    """An ISO date/time or a relative span ago ("7d"), as an aware datetime."""
    if value in (None, ""):
        return default
    text = str(value).strip()
    if match := _RELATIVE.match(text):
        return timezone.now() - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    parsed = parse_datetime(text)
    if parsed is None and (day := parse_date(text)) is not None:
        parsed = datetime(day.year, day.month, day.day)
    if parsed is None:
        raise ToolError(f"{field}: {value!r} is not a date/time (ISO like 2026-05-04T10:00, or 7d / 24h / 30m)")
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def window(args: dict, *, default_days: int | None = None) -> tuple[datetime | None, datetime | None]:
    """[since, until) from since/until, or the last `days` (default `default_days`)."""
    until = moment(args.get("until"), field="until")
    since = moment(args.get("since"), field="since")
    if since is None and (days := args.get("days") or default_days):
        since = (until or timezone.now()) - timedelta(days=days)
    if since and until and since >= until:
        raise ToolError("since must be before until")
    return since, until


def anchor(ctx: ToolContext, args: dict):
    """The moment a window is centred on: a delta (returned too) or `at`."""
    if args.get("delta_id"):
        delta = resolve(ctx, args["delta_id"])
        return delta.created_at, delta
    if args.get("at"):
        return moment(args["at"], field="at"), None
    raise ToolError("give delta_id or at")


def resolve(ctx: ToolContext, delta_id: str):
    try:
        return delta_get(workspace=ctx.workspace, id_or_prefix=delta_id)
    except ApplicationError as exc:
        raise ToolError(exc.message) from None


def deltas(ctx: ToolContext, args: dict, *, since=None, until=None):
    """The workspace's deltas narrowed by the common filters (kind, tags, window)."""
    return deltas_list(workspace=ctx.workspace, tags=args.get("tags") or (), kind=args.get("kind") or "",
                       since=since, until=until)


def limit_of(args: dict) -> int:
    return args.get("limit") or DEFAULT_LIMIT


# --- rendering -------------------------------------------------------------------------------------------

def delta_lines(delta, *, marker: str = "- ") -> list[str]:
    """One delta, whole: its id, time, source, kinds and full content (later lines indented)."""
    kinds = ",".join(t.removeprefix("kind:") for t in delta.tags if t.startswith("kind:"))
    head = f"{marker}[{delta.id}] {delta.created_at.strftime(TIME_FORMAT)} · {delta.source or '-'}"
    if kinds:
        head += f" · {kinds}"
    text = (delta.content or "").strip().splitlines() or [""]
    if delta.media_hash:
        text[-1] = f"{text[-1]} [image {delta.media_hash}]".strip()
    return [f"{head} · {text[0]}"] + [f"{' ' * len(marker)}    {line}" for line in text[1:]]


def listing(title: str, rows, *, total: int | None = None, empty: str = "nothing", marked=()) -> str:
    rows = list(rows)
    if not rows:
        return f"{title}: {empty}"
    shown = f"{len(rows)}" if total is None or total == len(rows) else f"{len(rows)} of {total} (raise limit for more)"
    lines = [f"{title} ({shown}):"]
    for delta in rows:
        lines += delta_lines(delta, marker="▸ " if delta.id in marked else "- ")
    return "\n".join(lines)


def span_text(since, until) -> str:
    start = since.strftime(TIME_FORMAT) if since else "the beginning"
    end = until.strftime(TIME_FORMAT) if until else "now"
    return f"{start} → {end}"
