"""Swarm mode (seed 001): for a synthesis (or full pipeline) over many sources, N specialists analyse
the sources from their angles at once, as a Celery group on the quality worker, and an aggregator
merges them as the chord's callback; the aggregate becomes part of the main pass's prompt.

It runs when the workspace has swarm enabled (QualitySettings.swarm_enabled, standing in for the
seed's plan entitlement), the workflow is synthesis or full_pipeline, and the pre-flight's retrieval
found at least `swarm_min_sources` deltas (should_activate). The fire parks while the swarm runs.
One failed specialist does not fail the swarm; when all fail, or the aggregator does, the main pass
runs without it. Model calls: one per specialist (role specialist), one aggregator (role aggregator)."""

import json
import time
import uuid

from celery import chord, group, signature
from django.db import connection, transaction
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.llm import LLMError
from harness.fires.models import Fire
from harness.quality import agents
from harness.quality.events import Step, emit, fire_resume
from harness.quality.models import QualityRun, QualitySettings
from lake.models import Delta
from lake.search import deltas_search
from lake.search.plan import default_plan

SWARM_WORKFLOWS = ("synthesis", "full_pipeline")
SOURCES_LIMIT = 10
COST_ESTIMATE_DECIMALS = 6


def may_activate(workflow: str, settings: QualitySettings, *, fire: Fire) -> bool:
    """Whether this fire could run the swarm (worth the pre-flight's retrieval): the workspace switched
    it on, the workflow is one it serves, and the session's user did not opt out (seed 001's "Disable
    swarm per user": `"swarm": false` in their profile's preferences)."""
    return settings.swarm_enabled and workflow in SWARM_WORKFLOWS and not user_opted_out(fire)


def should_activate(workflow: str, *, source_count: int, settings: QualitySettings, fire: Fire) -> bool:
    return may_activate(workflow, settings, fire=fire) and source_count >= max(1, settings.swarm_min_sources)


def user_opted_out(fire: Fire) -> bool:
    """The session's user profile (as the session copied it) says `"swarm": false`."""
    preferences = ((fire.session.user_profile_copy or {}).get("preferences") or {}) if fire.session_id else {}
    return preferences.get("swarm") is False


def sources_find(fire: Fire, settings: QualitySettings) -> list[dict]:
    """The swarm's sources: the lake's best hits for the question, by the default search plan (no
    model call), as {id, content}. They count as returned to the fire (the contract's citations)."""
    try:
        result = deltas_search(workspace=fire.workspace, query=fire.question, depth="shallow",
                               limit=SOURCES_LIMIT, plan=default_plan(fire.question))
    except ApplicationError:
        return []
    return [{"id": row.id, "content": row.content} for row in result.hits]


def dispatch(step: Step, specialists: list[str], sources: list[dict]) -> None:
    """Start the swarm and park the fire, with the step (the chord goes once it is written, after
    commit)."""
    run = step.run
    token = uuid.uuid4().hex
    run.swarm = {"specialists": specialists, "results": {}, "started_at": time.time()}
    run.waiting_for, run.waiting_token, run.waiting_since = "swarm", token, timezone.now()
    step.changed(run, "swarm", "waiting_for", "waiting_token", "waiting_since")
    step.emit("harness_swarm_activated", {"source_count": len(sources), "specialist_count": len(specialists),
                                          "specialists": specialists})
    step.after(lambda: send(run_id=run.pk, specialists=specialists, token=token))


def send(*, run_id, specialists: list[str], token: str) -> None:
    header = group(signature("quality.swarm_specialist", args=[run_id, angle, token]) for angle in specialists)
    callback = signature("quality.swarm_aggregate", args=[run_id, token])
    outbox.enqueue(chord(header, callback))


def specialist_run(*, run_id, angle: str) -> dict:
    """One specialist's analysis, recorded once (a redelivered task makes no second call); a model
    failure is recorded as the specialist's failure, never raised (the chord goes on)."""
    run = QualityRun.objects.select_related("fire__workspace").get(pk=run_id)
    done = run.swarm.get("results", {}).get(angle)
    if done is not None:
        return done
    fire = run.fire
    started = time.perf_counter()
    try:
        text, cost = agents.specialist_analyse(workspace=fire.workspace, angle=angle, question=fire.question,
                                               sources=_sources(run))
        result = {"ok": True, "text": text, "cost": cost}
    except LLMError as exc:
        result = {"ok": False, "error": f"{exc.code}: {exc.message}"[:500], "cost": 0.0}
    result["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
    with transaction.atomic():
        with connection.cursor() as cursor:  # one statement: the specialists write the same row at once
            cursor.execute("UPDATE harness_qualityrun SET swarm = jsonb_set(swarm, ARRAY['results', %s], %s::jsonb) "
                           "WHERE id = %s RETURNING (SELECT count(*) FROM jsonb_object_keys(swarm->'results'))",
                           [angle, json.dumps(result), run.pk])
            completed = cursor.fetchone()[0]
        emit(fire, run, "tool_sandbox", {"tool_name": "synthesis_swarm", "specialist": angle, "ok": result["ok"],
                                         "duration_ms": result["duration_ms"], "completed": completed,
                                         "total": len(run.swarm.get("specialists", []))}, runner=False)
    return result


def aggregate(*, run_id, token: str) -> bool:
    """The chord's callback: merge the specialists that answered (one aggregator call), record the
    swarm's outcome with harness_swarm_complete, and tick the fire's session again. False when the
    run no longer waits for this swarm."""
    run = QualityRun.objects.select_related("fire__workspace").get(pk=run_id)
    if run.waiting_for != "swarm" or run.waiting_token != token:
        return False
    fire, results = run.fire, run.swarm.get("results", {})
    analyses = {angle: r["text"] for angle, r in results.items() if r.get("ok")}
    merged, aggregator_cost, aggregator_ok = "", 0.0, False
    if analyses:
        try:
            merged, aggregator_cost = agents.aggregate(workspace=fire.workspace, question=fire.question,
                                                       analyses=analyses)
            aggregator_ok = True
        except LLMError:
            pass
    with transaction.atomic():
        locked = QualityRun.objects.select_for_update().get(pk=run_id)
        if locked.waiting_for != "swarm" or locked.waiting_token != token:
            return False
        cost = sum(r.get("cost", 0.0) for r in results.values()) + aggregator_cost
        outcome = {"specialists_succeeded": len(analyses), "specialists_failed": len(results) - len(analyses),
                   "aggregator_succeeded": aggregator_ok,
                   "total_duration_ms": round((time.time() - locked.swarm.get("started_at", time.time())) * 1000, 1),
                   "estimated_cost_usd": round(float(cost), COST_ESTIMATE_DECIMALS)}
        locked.swarm = {**locked.swarm, **outcome, "aggregate": merged}
        locked.waiting_for, locked.waiting_token, locked.waiting_since = "", "", None
        locked.save(update_fields=["swarm", "waiting_for", "waiting_token", "waiting_since"])
        emit(fire, locked, "harness_swarm_complete", outcome, runner=False)
        fire_resume(session_id=fire.session_id, workspace_id=fire.workspace_id, fire_id=fire.pk)
    return True


def _sources(run: QualityRun) -> list[dict]:
    contents = dict(Delta.objects.filter(workspace_id=run.workspace_id, pk__in=run.sources).values_list("id",
                                                                                                         "content"))
    return [{"id": delta_id, "content": contents[delta_id]} for delta_id in run.sources if delta_id in contents]
