"""The worker harness runtime (seed 004): one while loop over typed actions, bounded by `max_steps`.

    while steps < max_steps:
        action = the model's next action     UseTools(calls) | Finish(summary)
        UseTools -> each call to the worker port, its result committed before the next model call
        Finish   -> the worker's result

Every model answer and every tool result is appended to the call's journal and committed before
anything else happens, so a worker killed mid-loop resumes where the journal ends: a tool call with
a recorded result never runs again. The loop orchestrates nothing: it neither spawns workers nor
decides for the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import F
from django.utils import timezone

from fathom.llm import Message, ToolCall, ToolSpec, complete
from fathom.tracing import flush
from harness.conductor.models import CapabilityCall, Run
from harness.runtime import claims

FINISH = "finish"


@dataclass(frozen=True)
class UseTools:
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Finish:
    summary: str


@dataclass(frozen=True)
class LoopResult:
    ok: bool
    summary: str
    steps: int


class WorkerCancelled(Exception):
    pass


def worker_loop(*, call: CapabilityCall, role: str, system: str, task: str, tools: list[ToolSpec],
                run_tool: Callable[[ToolCall], str], max_steps: int, offline_policy=None) -> LoopResult:
    """Run (or resume) the loop of `call` (see the module docstring). `run_tool` executes one tool
    call (the worker port) and returns its result as the model reads it."""
    specs = [*tools, ToolSpec(FINISH, "Finish: your result, for the conductor.", {
        "type": "object", "required": ["summary"], "additionalProperties": False,
        "properties": {"summary": {"type": "string", "minLength": 1}}})]
    journal = list(call.journal)
    while True:
        action, steps = _last_action(journal)
        if isinstance(action, Finish):
            return LoopResult(True, action.summary, steps)
        if isinstance(action, UseTools):
            done = {entry["call_id"] for entry in journal if entry["type"] == "tool"}
            for tool_call in action.calls:
                if tool_call.id not in done:
                    _check_cancel(call)
                    _append(call, journal, {"type": "tool", "call_id": tool_call.id, "name": tool_call.name,
                                            "result": run_tool(tool_call)})
        if steps >= max_steps:
            results = [entry["result"] for entry in journal if entry["type"] == "tool"]
            return LoopResult(False, f"stopped at max_steps ({max_steps}) without finishing; last results:\n"
                                     + "\n".join(results[-3:]), steps)
        _check_cancel(call)
        completion = complete(workspace=call.workspace_id, role=role, messages=_messages(system, task, journal),
                              tools=specs, actor_id=call.actor_id, offline_policy=offline_policy)
        _append(call, journal, {"type": "model", "text": completion.text, "llm_call_id": completion.call_id or "",
                                "tool_calls": [c.to_dict() for c in completion.tool_calls]}, model_call=True)
        flush()


def _last_action(journal: list[dict]) -> tuple[UseTools | Finish | None, int]:
    """The typed action of the last model answer, and how many answers there were. An answer calling
    finish is Finish; plain text is Finish with that text; tool calls are UseTools."""
    answers = [entry for entry in journal if entry["type"] == "model"]
    if not answers:
        return None, 0
    last = answers[-1]
    calls = tuple(ToolCall(c["id"], c["name"], c.get("arguments") or {}) for c in last["tool_calls"])
    finish = next((c for c in calls if c.name == FINISH), None)
    if finish is not None:
        return Finish(str(finish.arguments.get("summary") or last["text"] or "(no summary)")), len(answers)
    if not calls:
        return Finish(last["text"] or "(no summary)"), len(answers)
    return UseTools(calls), len(answers)


def _messages(system: str, task: str, journal: list[dict]) -> list[Message]:
    messages = [Message.system(system), Message.user(task)]
    for entry in journal:
        if entry["type"] == "model":
            calls = [ToolCall(c["id"], c["name"], c.get("arguments") or {}) for c in entry["tool_calls"]]
            messages.append(Message.assistant(entry["text"], tool_calls=calls))
        else:
            messages.append(Message.tool(entry["call_id"], entry["result"], name=entry["name"]))
    return messages


def _append(call: CapabilityCall, journal: list[dict], entry: dict, *, model_call: bool = False) -> None:
    """Commit the entry (the whole journal, small): the call's heartbeat too, failing (ClaimLost) when
    the claim is no longer this runner's."""
    journal.append(entry)
    updated = CapabilityCall.objects.filter(pk=call.pk, runner=claims.runner_id()).update(
        journal=json.loads(json.dumps(journal, default=str)), runner_heartbeat_at=timezone.now(),
        model_calls=F("model_calls") + (1 if model_call else 0))
    if not updated:
        raise claims.ClaimLost(f"capability call {call.pk} is no longer claimed by {claims.runner_id()}")


def _check_cancel(call: CapabilityCall) -> None:
    if Run.objects.filter(pk=call.run_id, status=Run.Status.CANCELLED).exists():
        raise WorkerCancelled
