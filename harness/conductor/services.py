"""State changes of conductor runs (seed 004):

    run_create        record the run (accepted), open its trace, enqueue its first step
    run_step          one conductor step, event-driven (a run's creation, a finished call): under the
                      run row's lock, settle the agenda and dispatch EVERY ready item at once, each a
                      Celery task of its own; only when nothing is ready and nothing is in flight, make
                      the one model call the state asks for: the bootstrap (once per run) or a decision
    capability_call_run   a worker carries one call out (worker_port), then CapabilityCallFinished
                      enqueues the next step; no task waits on another
    run_cancel, runs_sweep

Redelivery is harmless everywhere: a dispatch is a CapabilityCall row, one per agenda item (unique),
created under the run's lock; the bootstrap's agenda is applied only while `bootstrapped_at` is
null, a decision only under its number (unique per run); a call's finish is a conditional UPDATE.
The model calls are made outside any transaction, under the run's claim. Every state change writes
a run event (harness.conductor.events)."""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from celery import current_task
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from fathom import outbox
from fathom.errors import ApplicationError
from fathom.tracing import SpanContext, continue_trace, scope, span, start_span
from fathom.tracing.services import spans_end
from fathom.transient import TRANSIENT_ERRORS
from harness.conductor import policy, worker_port
from harness.conductor.capabilities import capabilities_offered
from harness.conductor.events import run_event_emit, run_events_emit
from harness.conductor.models import AgendaItem, CapabilityCall, ConductorSettings, Decision, Run, RunEvent
from harness.fires.services import fire_cancel
from harness.runtime import claims
from harness.runtime.services import harness_settings_get

logger = logging.getLogger(__name__)
Event = RunEvent.Kind
MAX_OBJECTIVE_CHARS = 20_000
BOOTSTRAP, DECIDE = "bootstrap", "decide"


# --- settings ---------------------------------------------------------------------------------------------

def conductor_settings_get(*, workspace_id) -> ConductorSettings:
    """The workspace's conductor settings (a row with the defaults is created on first use)."""
    return ConductorSettings.objects.get_or_create(workspace_id=workspace_id)[0]


# --- runs -------------------------------------------------------------------------------------------------

def run_create(*, workspace, objective: str) -> Run:
    """Record a run of `objective` (accepted, nothing called yet), open its trace
    (trace.prompt.received, left open until the run ends) and enqueue its first step."""
    objective = (objective or "").strip()
    if not objective:
        raise ApplicationError("objective must not be empty")
    if len(objective) > MAX_OBJECTIVE_CHARS:
        raise ApplicationError(f"objective must be at most {MAX_OBJECTIVE_CHARS} characters")
    limits = conductor_settings_get(workspace_id=workspace.pk)
    with transaction.atomic():
        run = Run.objects.create(workspace=workspace, objective=objective,
                                 capabilities=capabilities_offered(terminal_enabled=limits.terminal_enabled,
                                                                   objective=objective))
        with scope(), continue_trace(None):
            root = start_span("trace.prompt", workspace=workspace.pk, actor_id=run.actor_id, run_id=str(run.pk),
                              objective=objective[:500], capabilities=run.capabilities)
            root.leave_open()  # ended when the run ends (_finish)
        run.trace_id, run.root_span_id = root.trace_id, root.span_id
        run.save(update_fields=["trace_id", "root_span_id"])
        run_event_emit(run, Event.RUN_ACCEPTED, {"objective": objective[:500], "capabilities": run.capabilities})
        step_enqueue(run_id=run.pk)
    return run


def step_enqueue(*, run_id) -> None:
    """Run a conductor step on a worker once the current transaction commits."""
    outbox.enqueue("fires.conductor_step", args=[str(run_id)])


def call_enqueue(*, call_id) -> None:
    """Run a capability call on the thread-pool worker (queue `quality`) once the transaction commits."""
    outbox.enqueue("quality.conductor_call", args=[str(call_id)])


def run_step(*, run_id) -> str:
    """One conductor step (see the module docstring); returns the run's status afterwards. Each pass
    either dispatches and returns, or makes one model call and goes round again, so a step ends after
    at most max_decisions + 2 passes."""
    run = Run.objects.select_related("workspace").get(pk=run_id)
    with continue_trace(_run_context(run)):
        for _ in range(conductor_settings_get(workspace_id=run.workspace_id).max_decisions + 3):
            need = _advance(run_id)
            if need is None or not _model_step(run_id, need):
                break
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def run_cancel(*, run: Run) -> Run:
    """Stop the run: it ends cancelled at once; its in-flight workers stop before their next model
    call or command (a research fire is cancelled), and their results are recorded but not used."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_terminal:
            return run
        run.cancel_requested_at = timezone.now()
        run.save(update_fields=["cancel_requested_at"])
        _finish(run, Run.Status.CANCELLED, "cancelled")
    for call in CapabilityCall.objects.filter(run=run, fire__isnull=False).exclude(status__in=CapabilityCall.TERMINAL):
        fire_cancel(fire=call.fire)  # it stops before its next model call
    return run


def runs_sweep(*, stale_after_seconds: int | None = None) -> list:
    """Enqueue again what a dead worker or a lost message left behind: calls dispatched or running
    with no live runner, and steps of live runs that have nothing in flight. Run by beat."""
    swept = []
    for call in CapabilityCall.objects.filter(status__in=[CapabilityCall.Status.DISPATCHED,
                                                          CapabilityCall.Status.RUNNING]).select_related("fire"):
        stale = stale_after_seconds or harness_settings_get(workspace_id=call.workspace_id).stale_after_seconds
        if claims.is_live(call.runner, call.runner_heartbeat_at, stale_after=stale):
            continue
        if call.fire is not None and claims.is_live(call.fire.runner, call.fire.runner_heartbeat_at,
                                                    stale_after=stale):
            continue  # a researcher's fire proves it is alive on its own row
        if call.created_at > timezone.now() - timedelta(seconds=stale):
            continue  # most likely still on its way to a worker
        call_enqueue(call_id=call.pk)
        swept.append(call.pk)
    for run in Run.objects.filter(status__in=[Run.Status.ACCEPTED, Run.Status.RUNNING]).exclude(
            calls__status__in=[CapabilityCall.Status.DISPATCHED, CapabilityCall.Status.RUNNING]):
        stale = stale_after_seconds or harness_settings_get(workspace_id=run.workspace_id).stale_after_seconds
        if not claims.is_live(run.runner, run.runner_heartbeat_at, stale_after=stale) and (
                run.created_at < timezone.now() - timedelta(seconds=stale)):
            step_enqueue(run_id=run.pk)
            swept.append(run.pk)
    return swept


# --- the deterministic half: settle and dispatch ---------------------------------------------------------------

def _advance(run_id) -> str | None:
    """Under the run's lock: settle waiting items, dispatch every ready one, and say which model call
    the run needs now (BOOTSTRAP, DECIDE) or None when it needs none (work in flight, or over)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_terminal:
            return None
        if run.bootstrapped_at is None:
            return BOOTSTRAP
        items = list(AgendaItem.objects.filter(run=run).order_by("number"))
        _settle(items)
        ready = [item for item in items if item.state == AgendaItem.State.READY]
        if ready:
            _dispatch(run, ready)
        if ready or any(item.state == AgendaItem.State.IN_FLIGHT for item in items):
            return None
        if run.decisions_made >= conductor_settings_get(workspace_id=run.workspace_id).max_decisions:
            _finish(run, Run.Status.BLOCKED, f"the run made its {run.decisions_made} decisions without completing")
            return None
        return DECIDE


def _settle(items: list[AgendaItem]) -> None:
    """A waiting item becomes ready when everything it depends on is done, failed when one of them failed."""
    states = {item.number: item.state for item in items}
    for item in items:
        if item.state != AgendaItem.State.WAITING:
            continue
        needed = [states.get(n) for n in item.depends_on]
        if any(s == AgendaItem.State.FAILED for s in needed):
            item.state, item.result = AgendaItem.State.FAILED, "not run: an item it depends on failed"
        elif all(s == AgendaItem.State.DONE for s in needed):
            item.state = AgendaItem.State.READY
        else:
            continue
        item.save(update_fields=["state", "result"])
        states[item.number] = item.state


def _dispatch(run: Run, ready: list[AgendaItem]) -> None:
    """Every ready item at once: a CapabilityCall each (one per item: the OneToOne makes a second
    dispatch of an item fail rather than happen), in flight, its task published after commit."""
    calls = CapabilityCall.objects.bulk_create(
        CapabilityCall(workspace_id=run.workspace_id, run=run, item=item, worker=item.capability,
                       call_id=f"call-{secrets.token_hex(8)}") for item in ready)
    AgendaItem.objects.filter(pk__in=[item.pk for item in ready]).update(state=AgendaItem.State.IN_FLIGHT)
    for item in ready:
        item.state = AgendaItem.State.IN_FLIGHT
    if run.status == Run.Status.ACCEPTED:
        run.status = Run.Status.RUNNING
        run.save(update_fields=["status"])
    run_events_emit(run, [(Event.CALL_DISPATCHED, {"item": call.item.number, "capability": call.worker,
                                                   "call_id": call.call_id}) for call in calls])
    for call in calls:
        call_enqueue(call_id=call.pk)


# --- the semantic half: bootstrap and decision (the policy's model calls) ---------------------------------------

def _model_step(run_id, need: str) -> bool:
    """Make the model call `need` names and apply its output; False when another runner holds the
    run's claim (it is making that call) or the state moved on meanwhile."""
    run = Run.objects.select_related("workspace").get(pk=run_id)
    stale = harness_settings_get(workspace_id=run.workspace_id).stale_after_seconds
    if not claims.claim(Run, run.pk, stale_after=stale):
        return False
    try:
        if need == BOOTSTRAP:
            return _bootstrap(run)
        return _decide(run)
    finally:
        claims.release(Run, run.pk)


def _bootstrap(run: Run) -> bool:
    if run.bootstrapped_at is not None or run.is_terminal:
        return True
    with span("conductor.bootstrap", actor_id=run.actor_id, run_id=str(run.pk)) as traced:
        result = policy.bootstrap(workspace=run.workspace, objective=run.objective, capabilities=run.capabilities,
                                  actor_id=run.actor_id)
        traced.set(items=len(result.output.items) if result.output else 0, error=str(result.error or ""))
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.bootstrapped_at is not None or locked.is_terminal:
            return True  # applied once: a second bootstrap's output is never used
        agenda = result.output.items if result.output else ()
        for number, entry in enumerate(agenda, start=1):
            AgendaItem.objects.create(
                workspace_id=run.workspace_id, run=locked, number=number, capability=entry.capability,
                input={"task": entry.task, **({"command": entry.command} if entry.command else {})},
                depends_on=list(entry.depends_on), source=BOOTSTRAP,
                state=AgendaItem.State.WAITING if entry.depends_on else AgendaItem.State.READY)
        Decision.objects.create(
            workspace_id=run.workspace_id, run=locked, number=0, kind=Decision.Kind.BOOTSTRAP,
            payload={"items": [{"capability": e.capability, "task": e.task, "command": e.command,
                                "depends_on": list(e.depends_on)} for e in agenda],
                     "dropped": list(result.output.dropped) if result.output else []},
            error=str(result.error or ""), llm_call_id=result.llm_call_id)
        locked.bootstrapped_at = timezone.now()
        locked.status = Run.Status.RUNNING
        locked.save(update_fields=["bootstrapped_at", "status"])
        run_event_emit(locked, Event.AGENDA_SET, {"items": len(agenda), "error": str(result.error or "")})
    return True


def _decide(run: Run) -> bool:
    state = runtime_state(run)
    if state.counts.get("ready") or state.counts.get("in_flight") or run.is_terminal:
        return False  # not the decision's turn: nothing may be ready or in flight when it is asked
    number = run.decisions_made + 1
    with span("conductor.decide", actor_id=run.actor_id, run_id=str(run.pk), number=number) as traced:
        result = policy.decide(workspace=run.workspace, state=state, actor_id=run.actor_id)
        traced.set(action=getattr(result.output, "name", ""), error=str(result.error or ""))
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.decisions_made != run.decisions_made or locked.is_terminal:
            return True
        action = result.output
        Decision.objects.create(
            workspace_id=run.workspace_id, run=locked, number=number, kind=Decision.Kind.DECIDE,
            action=getattr(action, "name", ""), reason=_reason_of(action), payload=_payload_of(action),
            error=str(result.error or ""), state_summary=result.prompt_state, llm_call_id=result.llm_call_id)
        locked.decisions_made = number
        locked.save(update_fields=["decisions_made"])
        run_event_emit(locked, Event.DECISION_MADE, {"number": number, "action": getattr(action, "name", ""),
                                             "error": str(result.error or "")})
        _apply(locked, action, number)
    return True


def _apply(run: Run, action, number: int) -> None:
    if isinstance(action, policy.SpawnWorker):
        if action.capability not in run.capabilities:
            return  # the policy checks it; a capability switched off since is not spawned
        last = AgendaItem.objects.filter(run=run).order_by("-number").values_list("number", flat=True).first() or 0
        AgendaItem.objects.create(
            workspace_id=run.workspace_id, run=run, number=last + 1, capability=action.capability,
            input={"task": action.task, **({"command": action.command} if action.command else {})},
            source=f"decision:{number}", state=AgendaItem.State.READY)
    elif isinstance(action, policy.MergeCanon):
        _merge(run)
    elif isinstance(action, policy.Complete):
        _merge(run)
        _finish(run, Run.Status.COMPLETED, action.answer)
    elif isinstance(action, policy.Block):
        _finish(run, Run.Status.BLOCKED, action.reason)
    # AwaitWorker, and output the policy could not use: recorded; the next pass decides again (counted)


def _merge(run: Run) -> None:
    items = list(AgendaItem.objects.filter(run=run, merged=False,
                                           state__in=[AgendaItem.State.DONE, AgendaItem.State.FAILED]))
    run.canon = [*run.canon, *({"item": i.number, "capability": i.capability, "ok": i.state == AgendaItem.State.DONE,
                                "result": i.result} for i in items)]
    run.save(update_fields=["canon"])
    AgendaItem.objects.filter(pk__in=[i.pk for i in items]).update(merged=True)


def _finish(run: Run, status: str, answer: str) -> None:
    """End the run (inside the caller's transaction, the run row locked) and its trace's root span."""
    run.status, run.answer, run.finished_at = status, answer[:20000], timezone.now()
    run.save(update_fields=["status", "answer", "finished_at"])
    run_event_emit(run, Event.RUN_FINISHED, {"status": status, "answer": answer[:2000]})
    workspace_id, trace_id, root = run.workspace_id, run.trace_id, run.root_span_id
    error = "" if status == Run.Status.COMPLETED else f"run {status}: {answer[:500]}"
    transaction.on_commit(lambda: spans_end(workspace_id=workspace_id, trace_id=trace_id,
                                            where={"span_id": root}, error=error))


def runtime_state(run: Run) -> policy.RuntimeState:
    """The runtime-state summary the decision reads."""
    items = list(AgendaItem.objects.filter(run=run).order_by("number"))
    counts: dict[str, int] = {}
    for item in items:
        counts[item.state] = counts.get(item.state, 0) + 1
    return policy.RuntimeState(
        objective=run.objective, capabilities=tuple(run.capabilities),
        items=tuple(policy.ItemState(i.number, i.capability, i.state, i.input.get("task", ""), i.result)
                    for i in items),
        decisions_made=run.decisions_made,
        max_decisions=conductor_settings_get(workspace_id=run.workspace_id).max_decisions,
        canon_size=len(run.canon), counts=counts)


def _reason_of(action) -> str:
    return getattr(action, "reason", "") or ""


def _payload_of(action) -> dict:
    if isinstance(action, policy.SpawnWorker):
        return {"capability": action.capability, "task": action.task, "command": action.command}
    if isinstance(action, policy.Complete):
        return {"answer": action.answer}
    return {}


# --- capability calls (the workers' side) -------------------------------------------------------------------

def capability_call_run(*, call_id) -> str:
    """Carry out one capability call on this worker (guarded by the call's claim, so a redelivered or
    duplicated task never runs it twice at once; a worker killed mid-call resumes: the research fire
    from its journal, the terminal loop from the call's), record CapabilityCallFinished and enqueue
    the run's next step. Returns the call's status."""
    call = CapabilityCall.objects.select_related("run", "run__workspace", "item").get(pk=call_id)
    run = call.run
    if call.is_terminal:
        step_enqueue(run_id=run.pk)  # its finish was committed; the step it enqueued may have been lost
        return call.status
    if run.is_terminal:
        _call_finish(call, ok=False, result=f"not run: the run is {run.status}", model_calls=call.model_calls)
        return CapabilityCall.Status.FAILED
    stale = harness_settings_get(workspace_id=call.workspace_id).stale_after_seconds
    if not claims.claim(CapabilityCall, call.pk, stale_after=stale):
        return call.status
    try:
        CapabilityCall.objects.filter(pk=call.pk).update(
            status=CapabilityCall.Status.RUNNING, attempts=F("attempts") + 1,
            started_at=call.started_at or timezone.now(),
            task_id=(current_task.request.id or "") if current_task else "")
        limits = conductor_settings_get(workspace_id=call.workspace_id)
        with continue_trace(_run_context(run)), span(
                "conductor.worker", actor_id=call.actor_id, run_id=str(run.pk), call_id=call.call_id,
                worker=call.worker, item=call.item.number) as traced:
            try:
                outcome = worker_port.execute(call=call, limits=limits)
            except (claims.ClaimLost, worker_port.WorkerBusy, *TRANSIENT_ERRORS):
                raise
            except Exception as exc:  # noqa: BLE001 - a worker's failure is its call's result, never the run's crash
                logger.exception("capability call %s failed", call.call_id)
                outcome = worker_port.WorkerOutcome(False, f"error: {type(exc).__name__}: {exc}")
            traced.set(ok=outcome.ok, model_calls=outcome.model_calls)
        _call_finish(call, ok=outcome.ok, result=outcome.result, model_calls=outcome.model_calls)
    finally:
        claims.release(CapabilityCall, call.pk)
    return CapabilityCall.Status.FINISHED if outcome.ok else CapabilityCall.Status.FAILED


def _call_finish(call: CapabilityCall, *, ok: bool, result: str, model_calls: int) -> None:
    """CapabilityCallFinished: once (a conditional UPDATE), then the run's next step, always."""
    # The run row is locked last, by the event's number, and only until commit: ten calls finishing at
    # once queue on it for two statements each. (A step never writes an in-flight item or its call,
    # so taking those first cannot deadlock with a step, which locks the run first.)
    with transaction.atomic():
        status = CapabilityCall.Status.FINISHED if ok else CapabilityCall.Status.FAILED
        finished = CapabilityCall.objects.filter(pk=call.pk).exclude(status__in=CapabilityCall.TERMINAL).update(
            status=status, result=result, model_calls=model_calls, finished_at=timezone.now())
        if finished:
            AgendaItem.objects.filter(pk=call.item_id).update(
                state=AgendaItem.State.DONE if ok else AgendaItem.State.FAILED, result=result)
            run_event_emit(call.run, Event.CALL_FINISHED, {
                "item": call.item.number, "call_id": call.call_id, "ok": ok, "model_calls": model_calls,
                "result": result[:500]})
        step_enqueue(run_id=call.run_id)


# --- the trace ----------------------------------------------------------------------------------------------

def _run_context(run: Run) -> SpanContext | None:
    if not run.trace_id:
        return None
    # Each step and call continues the run's trace below its root, named by the task carrying it.
    task_id = (current_task.request.id or "") if current_task else ""
    return SpanContext(trace_id=run.trace_id, span_id=run.root_span_id, workspace_id=run.workspace_id,
                       run_id=str(run.pk), task_id=task_id, actor_id=run.actor_id)

