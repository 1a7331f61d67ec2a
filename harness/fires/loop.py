"""run_threaded_fire: the one entry point of every fire (reactive, self-directing, introspective).

    pre-flight  the lifecycle hooks' (harness.fires.hooks: the quality harness classifies and plans)
    main loop   model <-> tools, each model response and each tool result committed before the
                next model call; ends on respond (or, at the turn cap, a forced final respond)
    verify      when a hook checks the answer: the fire parks while the checks run elsewhere, then
                keeps an answer or retries (back to main)
    writes      the per-fire writes and the session's output, once (harness.fires.writes)
    review      one model call whose only outcomes are propose_provenance or skip
    done

The fire's phase and journal are its whole state (the hooks keep theirs in their own tables):
calling this again on a fire whose worker died continues where the journal ends."""

import json
import logging
import secrets
import time
from contextlib import contextmanager, nullcontext

import jsonschema
from django.db import transaction
from django.utils import timezone

from fathom.llm import LLMError, Message, ToolCall, complete
from fathom.llm.errors import LLMBudgetExceeded
from fathom.llm.offline import OFFLINE_NOTICE, SearchThenRespond, request_digest
from fathom.llm.types import HARNESS_NOTE
from fathom.tracing import SpanContext, continue_trace, current_span, end_of, flush, span
from fathom.tracing.names import words
from fathom.tracing.services import run_spans
from fathom.transient import TRANSIENT_ERRORS, connections_reset
from harness.fires import writes
from harness.fires.hooks import FireLifecycle, Park
from harness.fires.journal import JournalTurn, journal_append, journal_read
from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.fires.prompt import render_messages, render_preamble
from harness.fires.tools import ToolContext, ToolError, tool_specs, tools_for
from harness.fires.tools import plan as plan_tool
from harness.fires.tools import respond as respond_tool
from harness.fires.tools.base import MAIN, REVIEW
from harness.fires.turn_stream import StreamedTurn, turn_listeners_open
from harness.runtime import claims
from harness.runtime.events import event_emit
from harness.runtime.models import HarnessSettings, SessionEvent
from harness.runtime.services import harness_settings_get

logger = logging.getLogger(__name__)
RESULT_PREVIEW_CHARS = 500
# Offline, "list fs://notes and read fs://notes/todo.md" calls the file tools (their results come
# back as TaskDone notes, which the offline model relays).
OFFLINE_PATH_TOOLS = {"list": "fs_list", "read": "fs_read"}


class FireCancelled(Exception):
    pass


def run_threaded_fire(fire: Fire, *, limits: HarnessSettings | None = None) -> Park | None:
    """Run (or resume) `fire` as far as it goes now; the caller holds its claim. Returns None when
    the fire ended (finished, failed or cancelled), or the Park of a hook it waits for (its claims
    went back with the hook's last write). A failure of the main loop is recorded on the fire and
    re-raised; a transient error (fathom.transient) is not: it is raised with the fire left running,
    for the retried task to resume from the journal."""
    limits = limits or harness_settings_get(workspace_id=fire.workspace_id)
    lifecycle = FireLifecycle(fire)
    with _resumed(fire), span(
            "trace.prompt", workspace=fire.workspace_id, actor_id=f"fire:{fire.pk}", run_id=str(fire.pk),
            mode=fire.mode, depth=fire.depth, question=fire.question[:500], autonomous=fire.autonomous) as root:
        if fire.status == Fire.Status.ACCEPTED:
            fire.status, fire.started_at, fire.trace_id = Fire.Status.RUNNING, timezone.now(), root.trace_id
            fire.save(update_fields=["status", "started_at", "trace_id"])
        try:
            park = None
            while park is None and fire.phase in (Fire.Phase.MAIN, Fire.Phase.VERIFY):
                if fire.phase == Fire.Phase.MAIN:
                    park = lifecycle.preflight() or _main_loop(fire, limits, lifecycle)
                if park is None and fire.phase == Fire.Phase.VERIFY:
                    park = _verified(fire, lifecycle)
            if park is not None:
                flush()
                root.leave_open()  # the run that resumes the fire once what it waits for answered ends it
                return park
            if fire.phase == Fire.Phase.WRITES:
                writes.fire_writes(fire, shown=lifecycle.ids_shown())
            if fire.phase == Fire.Phase.REVIEW:
                _review_pass(fire, limits)
        except FireCancelled:
            _end(fire, lifecycle, Fire.Status.CANCELLED, Fire.StopReason.CANCELLED)
        except claims.ClaimLost:
            raise
        except TRANSIENT_ERRORS:
            connections_reset()  # so this attempt's trace is written and its claims released
            root.leave_open()  # the attempt that resumes the fire ends it, as after a killed worker
            raise
        except LLMBudgetExceeded as exc:
            _end(fire, lifecycle, Fire.Status.FAILED, Fire.StopReason.BUDGET_EXCEEDED, error=f"{exc.code}: {exc.message}")
            raise
        except LLMError as exc:  # the model failed after the retry policy's attempts: its code says how
            _end(fire, lifecycle, Fire.Status.FAILED, Fire.StopReason.ERROR, error=f"{exc.code}: {exc.message}")
            raise
        except Exception as exc:
            _end(fire, lifecycle, Fire.Status.FAILED, Fire.StopReason.ERROR, error=f"{type(exc).__name__}: {exc}")
            raise
        else:
            _end(fire, lifecycle, Fire.Status.FINISHED, fire.stop_reason or Fire.StopReason.RESPONDED)
        root.set(status=fire.status, stop_reason=fire.stop_reason, model_calls=fire.model_calls)
    return None


def _verified(fire: Fire, lifecycle: FireLifecycle) -> Park | None:
    """The hooks' verdict on the answer once their checks are in (Park until then): on to writes, or
    back to main for a retry. A kept answer's per-fire writes commit with the verdict."""
    lifecycle.answer_check()
    with transaction.atomic():
        verdict = lifecycle.answer_verdict()
        if isinstance(verdict, Park):
            return verdict
        if verdict.retry:
            fire.phase, fire.response, fire.stop_reason = Fire.Phase.MAIN, {}, ""
        else:
            fire.phase, fire.response = Fire.Phase.WRITES, verdict.response or fire.response
            fire.verdict = Fire.Verdict.DEGRADED if verdict.degraded else Fire.Verdict.PASSED
            fire.verdict_reasons = list(verdict.reasons) if verdict.degraded else []
        fire.save(update_fields=["phase", "response", "stop_reason", "verdict", "verdict_reasons"])
        if fire.phase == Fire.Phase.WRITES:
            writes.fire_writes(fire, shown=lifecycle.ids_shown())
    return None


@contextmanager
def _resumed(fire: Fire):
    """A fire that ran before (its worker died, or it parked for the quality worker) continues its first
    run's trace, under a `fire.resume` span (with this run's attempt number) below that run's root span.
    The spans the earlier runs' tasks left open are ended as failed now, but that root: it ends with
    this run, as the fire does."""
    parent, roots, left_open, attempt = _earlier_runs(fire)
    if attempt == 1:
        yield
        return
    first_root = roots[0] if roots and not roots[0].ended else None
    tasks = {root.task_id for root in roots}
    for start in left_open:
        if start.task_id in tasks and start is not first_root:
            end_of(start, error=f"worker lost: attempt {attempt - 1} did not finish")
    try:
        with continue_trace(parent), span("fire.resume", workspace=fire.workspace_id, actor_id=f"fire:{fire.pk}",
                                          run_id=str(fire.pk), attempt=attempt, phase=fire.phase):
            yield
            if fire.is_terminal and first_root is not None:  # with this run's last events
                end_of(first_root, error="" if fire.status == Fire.Status.FINISHED
                       else f"fire {fire.status}: {fire.error}".strip(": "))
    except (claims.ClaimLost, *TRANSIENT_ERRORS):
        raise  # another worker runs it now, or the retried task will
    except Exception as exc:
        if first_root is not None:
            end_of(first_root, error=f"{type(exc).__name__}: {exc}")
        flush()
        raise
    flush()  # parked (harness.quality), the first root stays open: the run that finishes the fire ends it


def _earlier_runs(fire: Fire):
    """How a fire's run joins its trace: the parent to continue (None when the current span is in the
    trace already, as a child fire's parent is), the earlier runs' root spans' start events, first
    first, the start events of their spans left open (tracing.services.run_spans, one query), and this
    run's attempt number."""
    if not fire.trace_id:
        return None, [], [], 1
    starts = run_spans(workspace_id=fire.workspace_id, trace_id=fire.trace_id, run_id=str(fire.pk))
    roots = [start for start in starts if start.kind == "trace.prompt.received"]
    left_open = [start for start in starts if not start.ended and start.kind == words(start.name)[0]]
    attempt = max(len(roots), 1) + 1
    current = current_span()
    if current is not None and current.trace_id == fire.trace_id:
        return None, roots, left_open, attempt
    return SpanContext(trace_id=fire.trace_id, span_id=roots[0].span_id if roots else "",
                       workspace_id=fire.workspace_id), roots, left_open, attempt


# --- main loop ------------------------------------------------------------------------------------------

def _main_loop(fire: Fire, limits: HarnessSettings, lifecycle: FireLifecycle) -> Park | None:
    """Model <-> tools until the fire responds; the Park of a hook that checks the answer elsewhere."""
    tools = tools_for(phase=MAIN, disabled=fire.disabled_tools)
    by_name = {t.name: t for t in tools}
    specs = {False: tool_specs(tools), True: tool_specs([by_name["respond"]])}  # the same every turn
    journal = journal_read(fire=fire, phase=MAIN)  # read once (a resumed fire's turns), then kept as it grows
    # the hooks' additions, and the turns this attempt continues (a retry's follow the earlier attempts')
    preamble, turns = lifecycle.main_prompt(render_preamble(fire, history_limit=limits.history_messages),
                                            journal, limits)
    earlier = len(journal) - len(turns)
    committed = False
    while True:
        last = turns[-1] if turns else None
        if last is not None:
            response = _run_pending_calls(fire, last, by_name, lifecycle)
            if response is not None:
                return _respond(fire, response, lifecycle, forced=last.turn.forced)
        _check_cancel(fire, read_at_last_commit=committed)
        forced = len(turns) >= limits.max_turns_per_fire
        if forced and last is not None and last.turn.forced:
            # The forced turn answered without calling respond: its text is the answer.
            return _respond(fire, respond_tool.validate({"body": last.turn.text or "(no answer within the turn cap)"}),
                            lifecycle, forced=True)
        messages = render_messages(fire, turns, history_limit=limits.history_messages, forced=forced,
                                   max_turns=limits.max_turns_per_fire, preamble=preamble)
        turns.append(JournalTurn(_model_turn(fire, earlier + len(turns) + 1, MAIN, messages, specs[forced],
                                             forced=forced, lifecycle=lifecycle)))
        committed = True  # from here on, each commit of the journal has read the cancel request


def _run_pending_calls(fire: Fire, entry: JournalTurn, by_name: dict,
                       lifecycle: FireLifecycle | None = None) -> dict | None:
    """Run the turn's calls that have no recorded result (all of them, or the rest after a crash),
    adding each result to `entry`; return the response if the turn responded validly."""
    turn, done = entry.turn, entry.results
    respond_calls = [c for c in turn.tool_calls if c["name"] == "respond"]
    for position, call in enumerate(turn.tool_calls):
        if call["id"] in done or call["name"] == "respond":
            continue
        done[call["id"]] = _run_call(fire, turn, position, call, by_name, lifecycle)
    if not turn.tool_calls:
        if turn.text.strip():  # a lean reply: plain text is a respond with that body
            return respond_tool.validate({"body": turn.text})
        return None
    if respond_calls:
        call = respond_calls[0]
        recorded = done.get(call["id"])
        if recorded is not None:
            return respond_tool.validate(recorded.arguments) if recorded.ok else None
        try:  # checked against its schema as every call is, before anything of it is written
            problem = _problem(by_name.get("respond"), "respond", _arguments(call), by_name)
            if problem:
                raise ToolError(problem)
            response = respond_tool.validate(_arguments(call))
        except ToolError as exc:
            done[call["id"]] = _record(fire, turn, turn.tool_calls.index(call), call, f"error: {exc}", ok=False)
            return None
        done[call["id"]] = _record(fire, turn, turn.tool_calls.index(call), call, "responded", ok=True)
        return response
    return None


def _run_call(fire: Fire, turn: FireTurn, position: int, call: dict, by_name: dict,
              lifecycle: FireLifecycle | None) -> FireToolCall:
    name, args = call["name"], _arguments(call)
    plan_step = args.pop("plan_step", None) if isinstance(args, dict) else None
    tool = by_name.get(name)
    ctx = ToolContext(fire=fire, turn_number=turn.number, call_id=call["id"],
                      plan_step=plan_step if isinstance(plan_step, int) else None)
    started = time.perf_counter()
    with span("worker.tool", workspace=fire.workspace_id, call_id=call["id"], tool=name, arguments=args,
              plan_step=plan_step) as traced:
        problem = _problem(tool, name, args, by_name)
        if problem:
            traced.set(ok=False, error=problem)
            return _record(fire, turn, position, call, f"error: {problem}", ok=False, plan_step=ctx.plan_step)
        if tool.transactional:
            recorded = _run_in_transaction(fire, turn, position, call, tool, ctx, args, started, lifecycle)
        else:
            result, ok = _invoke(tool, ctx, args)
            recorded = _record(fire, turn, position, call, result, ok=ok, plan_step=ctx.plan_step,
                               latency_ms=(time.perf_counter() - started) * 1000, lifecycle=lifecycle)
        traced.set(ok=recorded.ok, result_chars=len(recorded.result))
        return recorded


def _run_in_transaction(fire, turn, position, call, tool, ctx, args, started, lifecycle) -> FireToolCall:
    """A tool that writes commits together with its result, in one transaction without a savepoint.
    When it fails, that transaction is rolled back whole (no half-writes) and the failure is recorded
    on its own."""
    try:
        with transaction.atomic():
            value = _run_tool(tool, ctx, args)
            return _record(fire, turn, position, call, value, ok=True, plan_step=ctx.plan_step,
                           latency_ms=(time.perf_counter() - started) * 1000, lifecycle=lifecycle)
    except _ToolFailed as failed:
        return _record(fire, turn, position, call, str(failed), ok=False, plan_step=ctx.plan_step,
                       latency_ms=(time.perf_counter() - started) * 1000, lifecycle=lifecycle)


def _problem(tool, name: str, args, by_name: dict) -> str:
    if tool is None:
        return f"unknown tool {name!r}; the tools of this fire are: {', '.join(sorted(by_name))}"
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {args!r:.200}"
    if "_unparsed" in args:  # the provider could not parse the model's arguments as a JSON object
        return f"arguments must be a JSON object, got {str(args['_unparsed'])!r:.200}"
    error = jsonschema.exceptions.best_match(_validator(tool).iter_errors(args))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path)
        return f"malformed arguments for {name}{f' at {where}' if where else ''}: {error.message}"
    return ""


_VALIDATORS: dict[int, tuple] = {}


def _validator(tool):
    # Built once per tool: jsonschema.validate would check the schema itself again on every call.
    # Keyed by identity (a Tool holds dicts, so it does not hash); the entry keeps its tool alive.
    cached = _VALIDATORS.get(id(tool))
    if cached is None or cached[0] is not tool:
        cached = _VALIDATORS[id(tool)] = (tool, jsonschema.validators.validator_for(tool.parameters)(tool.parameters))
    return cached[1]


def _invoke(tool, ctx: ToolContext, args: dict) -> tuple[str, bool]:
    # A tool that reads, or commits as it goes (introspect's child fire keeps its own journal, which
    # must be durable on its own: a worker dying inside it resumes the child rather than redoing it),
    # runs outside a transaction, unless one is open already and a failed query must not poison it.
    savepoint = transaction.get_connection().in_atomic_block
    try:
        with transaction.atomic() if savepoint else nullcontext():
            return _run_tool(tool, ctx, args), True
    except _ToolFailed as failed:
        return str(failed), False


class _ToolFailed(Exception):
    """A tool's failure, as the model reads it (its result)."""


def _run_tool(tool, ctx: ToolContext, args: dict) -> str:
    try:
        value = tool.run(ctx, args)
    except ToolError as exc:
        raise _ToolFailed(f"error: {exc}") from exc
    except (claims.ClaimLost, *TRANSIENT_ERRORS):
        raise  # not the tool's failure: the fire stops here, and the retried task runs the call again
    except Exception as exc:  # noqa: BLE001 - the model reads any tool failure as its result
        logger.warning("tool %s raised in fire %s", tool.name, ctx.fire.pk, exc_info=True)
        raise _ToolFailed(f"error: the tool raised {type(exc).__name__}: {exc}") from exc
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _record(fire, turn, position, call, result: str, *, ok: bool, plan_step=None, latency_ms: float = 0,
            lifecycle: FireLifecycle | None = None) -> FireToolCall:
    recorded = FireToolCall(workspace_id=fire.workspace_id, fire=fire, turn=turn, call_id=call["id"],
                            position=position, name=call["name"],
                            arguments=call["arguments"] if isinstance(call["arguments"], dict) else {},
                            plan_step=plan_step, result=result, ok=ok, latency_ms=latency_ms)
    plan_event = plan_tool.call_event(fire, turn.number, call, plan_step, ok=ok)  # a drift, or the plan's revision
    before = [dict(step) for step in fire.plan] if plan_step else []
    advanced = bool(plan_step) and plan_tool.advance(fire.plan, plan_step)
    # Joins the tool's transaction when there is one; needs its own only for more than one write.
    with transaction.atomic(savepoint=False) if advanced or plan_event or _in_session(fire) else nullcontext():
        if advanced or plan_event:
            fire.save(update_fields=["plan", "plan_events"])
        if advanced and lifecycle is not None:
            lifecycle.plan_advanced(before)
        fire.cancel_requested_at = journal_append(recorded, fire=fire)
        _session_event(fire, SessionEvent.Kind.AGENT_STREAM, {
            "fire_id": str(fire.pk), "turn": turn.number, "phase": turn.phase, "tool": call["name"],
            "call_id": call["id"], "plan_step": plan_step, "ok": ok, "result": result[:RESULT_PREVIEW_CHARS],
            **({"plan_event": plan_event} if plan_event else {})})
    return recorded


def _respond(fire: Fire, response: dict, lifecycle: FireLifecycle, *, forced: bool) -> Park | None:
    """The fire's answer, saved; when a hook checks it (phase verify), with the checks' start."""
    before = [dict(step) for step in fire.plan]
    plan_tool.finish(fire.plan)
    fire.response = response
    fire.stop_reason = Fire.StopReason.MAX_TURNS if forced else Fire.StopReason.RESPONDED
    fire.phase = Fire.Phase.VERIFY if lifecycle.checks_answer() else Fire.Phase.WRITES
    with transaction.atomic():
        fire.save(update_fields=["response", "stop_reason", "phase", "plan"])
        lifecycle.plan_advanced(before)
        return lifecycle.answer_submitted() if fire.phase == Fire.Phase.VERIFY else None


# --- review pass -----------------------------------------------------------------------------------------

SUPPLY_ONE = "none given: supply one"
REVIEW_PROMPT = """\
You are the post-response review pass of a fire that has answered. Your one job: decide whether what this \
fire surfaced should be consolidated into provenance (a named episode, topic or era wrapping the ids below). \
Only two outcomes: call propose_provenance (level above its constituents, a title, a summary, from_ids, a \
rationale, test questions), or call skip. Most fires skip; consolidate only a real, nameable stretch that \
the containers already active do not cover.
Standpoint and mood every fire: when the answer below carries no attestation or no mood shift, pass the missing \
ones in your call too: `attestation` (1-2 first-person sentences on what this fire taught you about yourself) \
and `mood_shift` (a small drift on one affect axis)."""


DEGRADED_REVIEW = "the answer is degraded: nothing of it is consolidated"


def _review_pass(fire: Fire, limits: HarnessSettings) -> None:
    """The review pass; none for a degraded answer (its working set is not consolidated either)."""
    if fire.verdict == Fire.Verdict.DEGRADED:
        fire.review, fire.phase = {"outcome": "skip", "reason": DEGRADED_REVIEW}, Fire.Phase.DONE
        fire.save(update_fields=["review", "phase"])
        return
    tools = tools_for(phase=REVIEW, disabled=fire.disabled_tools)
    by_name = {t.name: t for t in tools}
    turns = journal_read(fire=fire, phase=REVIEW)
    calls = []
    try:
        if not turns:
            _check_cancel(fire)
            messages = [Message.system(REVIEW_PROMPT), Message.user(_review_brief(fire))]
            turns = [JournalTurn(_model_turn(fire, _next_number(fire), REVIEW, messages, tool_specs(tools),
                                             forced=False))]
        entry = turns[-1]
        _run_pending_calls(fire, entry, by_name)
        calls = sorted(entry.results.values(), key=lambda c: c.position)
        proposed = [c for c in calls if c.name == "propose_provenance" and c.ok]
        outcome = {"outcome": "proposed", "results": [c.result for c in proposed]} if proposed else {
            "outcome": "skip", "reason": next((c.result for c in calls if c.name == "skip"), entry.turn.text[:500])}
    except LLMError as exc:  # the answer stands; a review that could not run is reported, not fatal
        outcome = {"outcome": "error", "error": str(exc)}
    fire.review = outcome
    fire.phase = Fire.Phase.DONE
    with transaction.atomic():
        fire.writes = {**fire.writes, **writes.review_writes(fire, calls)}
        fire.save(update_fields=["review", "phase", "writes"])


def _review_brief(fire: Fire) -> str:
    cited = fire.response.get("cited_ids", [])
    results = [f"- {c.name}: {c.result[:1500]}" for c in
               FireToolCall.objects.filter(fire=fire, turn__phase=MAIN, ok=True).exclude(name="respond")]
    return "\n\n".join([
        f"Question: {fire.question}", f"Answer: {fire.response.get('body', '')}",
        f"Cited ids: {', '.join(cited) or 'none'}", "Working set (tool results):\n" + ("\n".join(results) or "none"),
        f"Attestation: {fire.response.get('attestation') or SUPPLY_ONE}",
        f"Mood shift: {fire.response.get('mood_shift') or SUPPLY_ONE}",
    ])


class OfflineReview:
    """The review pass with no language model: skip, saying so, and supply what the answer left
    out (seed 000: every fire that answers writes an attestation and a mood shift), worded so
    that nobody takes them for a model's."""

    def next_step(self, request):
        brief = request.last_user_text
        arguments = {"reason": f"{OFFLINE_NOTICE} no review without a language model"}
        if f"Attestation: {SUPPLY_ONE}" in brief:
            arguments["attestation"] = (f"{OFFLINE_NOTICE} I answered from what the lake holds, without a language "
                                        "model: I can repeat what was written down, not weigh it.")
        if f"Mood shift: {SUPPLY_ONE}" in brief:
            arguments["mood_shift"] = {"direction": "-", "axis": "certainty", "magnitude": 0.05,
                                       "reason": f"{OFFLINE_NOTICE} answered without a language model"}
        return ToolCall(id=f"offline-review-{request_digest(request)[:12]}", name="skip", arguments=arguments)


OFFLINE_REVIEW = OfflineReview()


# --- model calls and the journal ---------------------------------------------------------------------------

def _model_turn(fire: Fire, number: int, phase: str, messages: list, specs: list, *, forced: bool,
                lifecycle: FireLifecycle | None = None) -> FireTurn:
    """One model call, streamed to the turn's listeners (harness.fires.turn_stream, and the hooks') as it
    is written, then committed as a FireTurn before anything else happens."""
    call_id = f"llm-{secrets.token_hex(6)}"
    streamed = StreamedTurn(fire=fire, number=number, phase=phase, call_id=call_id)
    listeners = turn_listeners_open(streamed, also=lifecycle.turn_listeners(streamed) if lifecycle else ())
    completion = complete(  # which writes the trace so far, and the call's start, before the call goes out
        workspace=fire.workspace, role="review" if phase == REVIEW else "main", messages=messages, tools=specs,
        call_id=call_id,
        stream=listeners.feed if listeners else None,
        # The review pass reads a brief the harness composed (question, answer, tool results): no
        # conversation that model middleware (Festinger) should learn from.
        **({"conversation": False} if phase == REVIEW else {}),
        # Offline, the hits alone (no neighbours in time): what is cited is what matched.
        offline_policy=OFFLINE_REVIEW if phase == REVIEW else SearchThenRespond(
            "semantic", respond_tool="respond", text_argument="body", citations_argument="cited_ids",
            cards_argument="cards", question=fire.question, extra_arguments={"depth": "shallow"},
            path_tools=OFFLINE_PATH_TOOLS, relay_prefixes=(f"{HARNESS_NOTE} [TaskDone]",)),
    )
    listeners.close(completion)
    usage = completion.usage
    turn = FireTurn(workspace_id=fire.workspace_id, fire=fire, number=number, phase=phase, text=completion.text,
                    tool_calls=[c.to_dict() for c in completion.tool_calls], forced=forced,
                    stop_reason=str(completion.stop_reason), model=completion.model, provider=completion.provider,
                    input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=completion.cost,
                    latency_ms=completion.latency_ms, call_id=completion.call_id or "")
    with transaction.atomic() if _in_session(fire) else nullcontext():
        fire.cancel_requested_at = journal_append(turn, fire=fire, counters={
            "model_calls": 1, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cost": completion.cost})
        _session_event(fire, SessionEvent.Kind.AGENT_STREAM, {
            "fire_id": str(fire.pk), "turn": number, "phase": phase, "call_id": call_id, "text": completion.text,
            "tool_calls": [{"id": c.id, "name": c.name} for c in completion.tool_calls], "forced": forced})
    flush()  # the call's span, with the turn it was committed as
    return turn


def _next_number(fire: Fire) -> int:
    last = FireTurn.objects.filter(fire=fire).order_by("-number").values_list("number", flat=True).first()
    return (last or 0) + 1


def _arguments(call: dict):
    args = call.get("arguments")
    return dict(args) if isinstance(args, dict) else args


def _check_cancel(fire: Fire, *, read_at_last_commit: bool = False) -> None:
    """Stop before the next model call if the fire was asked to. Every commit of the journal reads
    the request on its way (journal_append), so after one there is nothing left to ask the database."""
    if fire.cancel_requested_at is not None:
        raise FireCancelled
    if not read_at_last_commit and Fire.objects.filter(pk=fire.pk, cancel_requested_at__isnull=False).exists():
        raise FireCancelled


def _in_session(fire: Fire) -> bool:
    """Whether the fire speaks to a session (a top-level fire of a session turn): its journal then
    streams AgentStream events, and its commits keep the session's claim alive too."""
    return bool(fire.session_id) and fire.depth == 0


def _end(fire: Fire, lifecycle: FireLifecycle, status: str, stop_reason: str, *, error: str = "") -> None:
    """The fire's end, saved together with what its hooks close on hearing it."""
    fire.status, fire.stop_reason, fire.error, fire.finished_at = status, stop_reason, error[:4000], timezone.now()
    if status != Fire.Status.FINISHED:
        fire.phase = Fire.Phase.DONE
    with transaction.atomic():
        fire.save(update_fields=["status", "stop_reason", "error", "finished_at", "phase"])
        lifecycle.ended()
    fire.refresh_from_db(fields=["model_calls", "input_tokens", "output_tokens", "cost"])


def _session_event(fire: Fire, kind: str, data: dict) -> None:
    """An AgentStream event of a session's fire, which is the session's heartbeat too (ClaimLost if
    another runner took the session over)."""
    if _in_session(fire):
        event_emit(session_id=fire.session_id, workspace_id=fire.workspace_id, kind=kind, data=data, turn_id=fire.turn_id,
                   runner=claims.runner_id())
