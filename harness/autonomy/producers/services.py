"""Producer runs: request one (queued, run by a task), run it (one model call, its proposals drafted
through the proposals service and its gate, each mirrored into the lake), and the starts by
pressure and by beat.

A run is claimed by a conditional UPDATE (queued -> running), so a redelivered or duplicated task
runs it once. A pressure run is also one per workspace and window (a unique row)."""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import jsonschema
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.llm import LLMError, Message, ToolCall, ToolSpec, complete
from fathom.models import Workspace
from harness.autonomy.models import ProducerRun
from lake.models import AGENT_SOURCES, LEVEL_PREFIX, PROVENANCE_TAG, QA_MARKER_TAG, Delta
from proposals.services import proposal_draft

logger = logging.getLogger(__name__)
RUN_TASK = "fires.producer_run"
ROLE = "producer"
# The sources of the agent's own output (lake.models.AGENT_SOURCES: the harness's, the producers' and
# the proposals' writes) and of provenance: never material to name, nor pressure to name it.
OWN_SOURCES = (*sorted(AGENT_SOURCES), "provenance")
MAX_OFFERED = 200
OFFLINE_EPISODE = 25
PROPOSAL_ITEM = {
    "type": "object", "required": ["title", "from_ids"], "properties": {
        "level": {"type": "integer", "minimum": 1, "maximum": 3},
        "title": {"type": "string", "minLength": 1, "maxLength": 300},
        "summary": {"type": "string"},
        "from_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "rationale": {"type": "string"},
        "test_questions": {"type": "array", "items": {"type": "string"}},
    }}
PROPOSE_TOOL = ToolSpec(
    "propose", "Propose the provenance you see: named stretches over the ids shown, each one level above them.",
    {"type": "object", "required": ["proposals"], "additionalProperties": False,
     "properties": {"proposals": {"type": "array", "items": PROPOSAL_ITEM, "maxItems": 10}}})
PROMPTS = {
    ("topical", "window"): "You are the topical producer. Below are moments of the lake that no episode names yet. "
                           "Group the ones that belong together into level-1 episodes (a title, a summary, "
                           "from_ids), and call propose. Leave out what stands alone; propose nothing if nothing "
                           "belongs together.",
    ("topical", "l2"): "You are the topical producer's L2 pass. Below are level-1 episodes no topic contains yet. "
                       "Group related episodes into level-2 topics (title, summary, from_ids) and call propose.",
    ("reflective", ""): "You are the reflective producer. Below are your own recent attestations, mood shifts, "
                        "directives and Sit transcripts, and the episodes and topics already named. Propose "
                        "identity- and narrative-shaped provenance: level 1 over moments, level 2 over episodes, "
                        "level 3 (an era) over topics, each strictly above what it wraps. Call propose.",
}


# --- requests --------------------------------------------------------------------------------------------

def producer_run_request(*, workspace, producer: str, origin: str, mode: str = "", hours: int = 24,
                         window_start: datetime | None = None, enqueue: bool = True) -> ProducerRun | None:
    """Record a queued run and (with `enqueue`) queue its task after commit; the CLI runs it
    inline instead. A pressure run whose window has one already returns None."""
    if producer not in ProducerRun.Producer.values:
        raise ApplicationError(f"producer must be one of {', '.join(ProducerRun.Producer.values)}",
                               code="not_found", status_code=404, details={"field": "name"})
    mode = _mode_of(producer, mode)
    if not 1 <= hours <= 24 * 90:
        raise ApplicationError("hours must be between 1 and 2160", details={"field": "hours"})
    try:
        with transaction.atomic():
            run = ProducerRun.objects.create(workspace=workspace, producer=producer, mode=mode, hours=hours,
                                             origin=origin, window_start=window_start)
            if enqueue:
                outbox.enqueue(RUN_TASK, args=[run.pk])
    except IntegrityError:
        if origin == ProducerRun.Origin.PRESSURE:
            return None
        raise
    return run


def producers_pressure_start(*, workspace_id: int, window_start: datetime) -> ProducerRun | None:
    """Un-provenanced material has accumulated: a topical window run, once per autonomy window."""
    return producer_run_request(workspace=_workspace(workspace_id), producer="topical", mode="window",
                                origin=ProducerRun.Origin.PRESSURE, window_start=window_start)


def producers_beat(*, workspace_ids) -> list[ProducerRun]:
    """The beat's runs: a reflective run and a topical L2 pass in each workspace given."""
    runs = []
    for workspace_id in workspace_ids:
        workspace = _workspace(workspace_id)
        runs.append(producer_run_request(workspace=workspace, producer="reflective", origin="beat"))
        runs.append(producer_run_request(workspace=workspace, producer="topical", mode="l2", origin="beat"))
    return runs


# --- a run -----------------------------------------------------------------------------------------------

def producer_run(*, run_id: int) -> ProducerRun:
    """Run a queued run once: read its substrate, make one model call, draft each proposal through
    the gate and mirror it (and its decision) into the lake. A failure is recorded on the run."""
    claimed = ProducerRun.objects.filter(pk=run_id, status=ProducerRun.Status.QUEUED).update(
        status=ProducerRun.Status.RUNNING, started_at=timezone.now())
    run = ProducerRun.objects.select_related("workspace").get(pk=run_id)
    if not claimed:
        return run
    try:
        offered = substrate(run)
        run.read = len(offered)
        proposed = _ask(run, offered) if offered else []
        run.proposals = [_draft(run, item, offered) for item in proposed]
        run.status = ProducerRun.Status.DONE
    except (LLMError, jsonschema.ValidationError) as exc:
        run.status, run.error = ProducerRun.Status.FAILED, f"{type(exc).__name__}: {exc}"[:4000]
    run.finished_at = timezone.now()
    run.save(update_fields=["read", "proposals", "status", "error", "finished_at", "model_calls"])
    return run


@dataclass(frozen=True)
class Offered:
    id: str
    content: str
    level: int | None


def substrate(run: ProducerRun) -> dict[str, Offered]:
    """What the run is shown, by id: un-provenanced moments of the window (topical window),
    episodes no topic holds (topical l2), or its own reflective writes and the named stretches that
    no provenance wraps yet (reflective: the same material is not offered twice)."""
    since = timezone.now() - timedelta(hours=run.hours)
    if run.producer == "topical" and run.mode == "window":
        rows = _uncontained(run.workspace_id, since=since, level=None, contained_by=1)
    elif run.producer == "topical":
        rows = _uncontained(run.workspace_id, since=since, level=1, contained_by=2)
    else:
        lake = Delta.objects.filter(workspace_id=run.workspace_id)
        own = lake.filter(created_at__gte=since, tags__overlap=[
            "kind:standpoint-attestation", "kind:mood-shift", "kind:directive"]).order_by("-created_at")[:80]
        sits = lake.filter(created_at__gte=since, tags__contains=["kind:card", "mode:self_directing"])[:40]
        named = (lake.filter(tags__contains=[PROVENANCE_TAG]).exclude(tags__contains=[QA_MARKER_TAG])
                 .order_by("-created_at")[:40])
        rows = [(d.id, d.content, d.level) for d in [*own, *sits, *named]]
        unwrapped = _unwrapped(run.workspace_id, [row[0] for row in rows])
        rows = [row for row in rows if row[0] in unwrapped]  # what a provenance names already is not offered again
    return {delta_id: Offered(delta_id, content, level) for delta_id, content, level in rows}


def _unwrapped(workspace_id: int, ids: list[str]) -> set[str]:
    """Of `ids`, those no provenance above level 0 wraps yet (a Q/A marker names no stretch)."""
    table = Delta._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"""
            SELECT d.id FROM unnest(%(ids)s::varchar[]) AS d(id)
            WHERE NOT EXISTS (SELECT 1 FROM {table} p WHERE p.workspace_id = %(ws)s
                              AND p.tags @> ARRAY[%(provenance)s, 'from:' || d.id]::varchar[]
                              AND NOT p.tags && ARRAY[%(marker)s, %(level0)s]::varchar[])""",
                       {"ids": ids, "ws": workspace_id, "provenance": PROVENANCE_TAG, "marker": QA_MARKER_TAG,
                        "level0": f"{LEVEL_PREFIX}0"})
        return {row[0] for row in cursor.fetchall()}


def _uncontained(workspace_id: int, *, since: datetime, level: int | None, contained_by: int) -> list:
    """Deltas of the window (moments, or provenances of `level`) that no provenance of level
    `contained_by` or higher wraps yet, oldest first (at most MAX_OFFERED)."""
    table = Delta._meta.db_table
    if level is None:
        kind = "NOT d.tags && ARRAY[%(provenance)s]::varchar[] AND NOT d.source = ANY(%(own)s)"
    else:
        kind = "d.tags @> ARRAY[%(provenance)s, %(level)s]::varchar[]"
    with connection.cursor() as cursor:
        cursor.execute(f"""
            SELECT d.id, d.content FROM {table} d
            WHERE d.workspace_id = %(ws)s AND d.created_at >= %(since)s AND {kind}
              AND NOT EXISTS (SELECT 1 FROM {table} p WHERE p.workspace_id = %(ws)s
                              AND p.tags @> ARRAY[%(provenance)s, 'from:' || d.id]::varchar[]
                              AND NOT p.tags && ARRAY[%(marker)s, %(level0)s]::varchar[]
                              AND NOT p.tags && %(lower)s::varchar[])
            ORDER BY d.created_at, d.id LIMIT {MAX_OFFERED}""",
                       {"ws": workspace_id, "since": since, "provenance": PROVENANCE_TAG, "own": list(OWN_SOURCES),
                        "level": f"{LEVEL_PREFIX}{level}", "marker": QA_MARKER_TAG, "level0": f"{LEVEL_PREFIX}0",
                        "lower": [f"{LEVEL_PREFIX}{n}" for n in range(1, contained_by)]})
        return [(delta_id, content, level) for delta_id, content in cursor.fetchall()]


def _ask(run: ProducerRun, offered: dict[str, Offered]) -> list[dict]:
    lines = [f"[{o.id}]{f' (L{o.level})' if o.level is not None else ''} {_line(o.content)}" for o in offered.values()]
    run.model_calls += 1
    completion = complete(workspace=run.workspace, role=ROLE, tools=[PROPOSE_TOOL], tool_choice="required",
                          actor_id=f"producer:{run.producer}:{run.pk}",
                          messages=[Message.system(PROMPTS[(run.producer, run.mode)]), Message.user("\n".join(lines))],
                          offline_policy=_Offline(offline_proposals(run, offered)))
    arguments = next((c.arguments for c in completion.tool_calls if c.name == PROPOSE_TOOL.name), {"proposals": []})
    jsonschema.validate(arguments, PROPOSE_TOOL.parameters)
    return arguments["proposals"]


def offline_proposals(run: ProducerRun, offered: dict[str, Offered]) -> list[dict]:
    """What the offline model proposes, deterministically: one stretch over the oldest offered
    (an episode of moments, a topic of episodes, a reflection of its own writes), if there are
    at least two."""
    items = [o for o in offered.values() if run.producer == "topical" or o.level is None]
    if len(items) < 2:
        return []
    chosen = items[:OFFLINE_EPISODE]
    level = 2 if run.mode == "l2" else 1
    kind = {"window": "Episode", "l2": "Topic"}.get(run.mode, "Reflection")
    return [{"level": level, "title": f"{kind}: {_line(chosen[0].content, 80)} (and {len(chosen) - 1} more)",
             "summary": "\n".join(f"- {_line(o.content, 120)}" for o in chosen), "from_ids": [o.id for o in chosen],
             "rationale": "offline: the oldest unnamed stretch, taken whole"}]


def _draft(run: ProducerRun, item: dict, offered: dict[str, Offered]) -> dict:
    """One proposal through the gate (which mirrors it, and its decision, into the lake). An invalid
    proposal, or one naming material already named at its level, is reported in the run, not raised."""
    from_ids = [i for i in dict.fromkeys(item["from_ids"]) if i in offered]
    level = item.get("level") or (2 if run.mode == "l2" else 1)
    if run.producer == "topical":
        level = 2 if run.mode == "l2" else 1
    if not from_ids:
        return {"title": item["title"], "error": "none of its from_ids were among the deltas shown"}
    tags = [f"producer:{run.producer}", f"producer-run:{run.pk}"]
    try:
        proposal = proposal_draft(workspace=run.workspace, tool="provenance", title=item["title"], level=level,
                                  rationale=item.get("rationale", ""), producer=f"producer:{run.producer}:run:{run.pk}",
                                  tags=tags, payload={"from_ids": from_ids, "summary": item.get("summary", ""),
                                                      "test_questions": item.get("test_questions", []), "tags": tags})
    except ApplicationError as exc:
        return {"title": item["title"], "error": exc.message}
    return {"id": proposal.pk, "level": proposal.level, "status": proposal.status, "result": proposal.result_ref}


class _Offline:
    def __init__(self, proposals: list[dict]):
        self.proposals = proposals

    def next_step(self, request):
        return ToolCall(id="offline-propose", name=PROPOSE_TOOL.name, arguments={"proposals": self.proposals})


def _mode_of(producer: str, mode: str) -> str:
    if producer == "reflective":
        if mode:
            raise ApplicationError("the reflective producer takes no mode", details={"field": "mode"})
        return ""
    mode = mode or "window"
    if mode not in ("window", "l2"):
        raise ApplicationError("mode must be window or l2", details={"field": "mode"})
    return mode


def _workspace(workspace_id):
    return Workspace.objects.get(pk=workspace_id)


def _line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
