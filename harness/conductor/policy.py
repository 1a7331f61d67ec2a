"""The policy (seed 004): the only place the conductor calls a model. Pure from the runtime's point of
view: an input goes in (the objective, the capabilities, a summary of the runtime state), a typed
output comes back, and nothing is written but the trace (`complete` emits llm.call.started /
completed / failed). Output the policy cannot use is returned as a typed PolicyError, never raised.

    bootstrap(...) -> PolicyResult(output=Agenda)    once per run: the initial agenda
    decide(...)    -> PolicyResult(output=<action>)  SpawnWorker | AwaitWorker | MergeCanon | Complete | Block

Both calls read a brief the conductor composed, so they run with a fresh context: no model middleware,
so Festinger recalls nothing into them and learns nothing from them. With no model configured the
offline model answers both deterministically (OfflineBootstrap, OfflineDecide below), so a run works
with no key."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jsonschema

from fathom.llm import LLMError, Message, ToolCall, ToolSpec, complete
from fathom.llm.offline import OFFLINE_NOTICE, request_digest
from harness.conductor.capabilities import (
    RESEARCHER,
    ROUTING_GUIDANCE,
    TERMINAL,
    capabilities_brief,
    explicitly_local_shell,
)

ROLE = "conductor"


# --- typed outputs ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AgendaEntry:
    capability: str
    task: str
    command: str = ""
    depends_on: tuple[int, ...] = ()


@dataclass(frozen=True)
class Agenda:
    items: tuple[AgendaEntry, ...]
    dropped: tuple[str, ...] = ()  # capabilities the model named that this run does not offer


@dataclass(frozen=True)
class SpawnWorker:
    capability: str
    task: str
    command: str = ""
    reason: str = ""
    name = "SpawnWorker"


@dataclass(frozen=True)
class AwaitWorker:
    reason: str = ""
    name = "AwaitWorker"


@dataclass(frozen=True)
class MergeCanon:
    reason: str = ""
    name = "MergeCanon"


@dataclass(frozen=True)
class Complete:
    answer: str
    reason: str = ""
    name = "Complete"


@dataclass(frozen=True)
class Block:
    reason: str
    name = "Block"


class PolicyError(Exception):
    """Model output the policy could not turn into a typed output (or a model call that failed)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message

    def __str__(self):
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class PolicyResult:
    output: Agenda | SpawnWorker | AwaitWorker | MergeCanon | Complete | Block | None
    error: PolicyError | None = None
    llm_call_id: str = ""
    prompt_state: str = ""


# --- inputs ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ItemState:
    number: int
    capability: str
    state: str
    task: str
    result: str = ""


@dataclass(frozen=True)
class RuntimeState:
    """What the decision sees: the objective, what the agenda holds and how it stands."""

    objective: str
    capabilities: tuple[str, ...]
    items: tuple[ItemState, ...] = ()
    decisions_made: int = 0
    max_decisions: int = 6
    canon_size: int = 0
    counts: dict = field(default_factory=dict)

    def summary(self) -> str:
        counts = ", ".join(f"{self.counts.get(s, 0)} {s.replace('_', ' ')}"
                           for s in ("ready", "in_flight", "waiting", "done", "failed"))
        lines = [f"Runtime state: {len(self.items)} agenda item(s): {counts}. "
                 f"Decisions made: {self.decisions_made} of at most {self.max_decisions}. "
                 f"Merged into the canon: {self.canon_size} result(s)."]
        for item in self.items:
            line = f"{item.number}. {item.capability} [{item.state}] task: {_clip(item.task, 300)}"
            if item.result:
                line += f"\n   result: {_clip(item.result, 800)}"
            lines.append(line)
        return "\n".join(lines)


# --- the two calls ----------------------------------------------------------------------------------------

BOOTSTRAP_PROMPT = """\
You are the conductor's bootstrap. Turn the objective into the initial agenda: the work items that carry it \
out, each on one capability. Call set_agenda once. Keep it small: one item is usual for a simple question. \
Only the capabilities listed exist. Give a terminal item the exact command to run.

Capabilities:
{capabilities}

{routing}"""

DECIDE_PROMPT = """\
You are the conductor's decision. Nothing is ready and nothing is running: choose exactly one next action \
by calling one tool. spawn_worker adds one work item; merge_canon merges finished results into the run's \
canon; complete ends the run with the answer to the objective (from the results); block ends it when it \
cannot be done, saying why; await_worker only when a worker is still running. Complete as soon as the \
results answer the objective.

Capabilities:
{capabilities}

{routing}"""


def bootstrap(*, workspace, objective: str, capabilities, actor_id: str = "") -> PolicyResult:
    """One model call: the objective and the capabilities in, the initial Agenda out (only
    capabilities that exist; dependencies only on earlier items)."""
    capabilities = tuple(capabilities)
    messages = [Message.system(BOOTSTRAP_PROMPT.format(capabilities=capabilities_brief(capabilities),
                                                       routing=ROUTING_GUIDANCE)),
                Message.user(f"Objective: {objective}")]
    try:
        completion = complete(workspace=workspace, role=ROLE, messages=messages, tools=[_agenda_tool(capabilities)],
                              actor_id=actor_id or None, offline_policy=OfflineBootstrap(objective, capabilities),
                              fresh_context=True)
    except LLMError as exc:
        return PolicyResult(None, PolicyError(exc.code, exc.message))
    try:
        agenda = _agenda(completion.tool_calls, capabilities)
    except PolicyError as error:
        return PolicyResult(None, error, completion.call_id or "")
    return PolicyResult(agenda, None, completion.call_id or "")


def decide(*, workspace, state: RuntimeState, actor_id: str = "") -> PolicyResult:
    """One model call: the runtime state in, one typed action out."""
    summary = state.summary()
    messages = [Message.system(DECIDE_PROMPT.format(capabilities=capabilities_brief(state.capabilities),
                                                    routing=ROUTING_GUIDANCE)),
                Message.user(f"Objective: {state.objective}\n\n{summary}")]
    try:
        completion = complete(workspace=workspace, role=ROLE, messages=messages,
                              tools=_action_tools(state.capabilities), actor_id=actor_id or None,
                              offline_policy=OfflineDecide(state), fresh_context=True)
    except LLMError as exc:
        return PolicyResult(None, PolicyError(exc.code, exc.message), prompt_state=summary)
    try:
        action = _action(completion.tool_calls, state.capabilities)
    except PolicyError as error:
        return PolicyResult(None, error, completion.call_id or "", summary)
    return PolicyResult(action, None, completion.call_id or "", summary)


# --- tools the model answers with, and their typed reading -------------------------------------------------

def _agenda_tool(capabilities) -> ToolSpec:
    return ToolSpec("set_agenda", "Set the run's initial agenda.", {
        "type": "object", "required": ["items"], "additionalProperties": False, "properties": {
            "items": {"type": "array", "maxItems": 20, "items": {
                "type": "object", "required": ["capability", "task"], "additionalProperties": False, "properties": {
                    "capability": {"type": "string", "enum": list(capabilities)},
                    "task": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "command": {"type": "string", "maxLength": 4000, "description": "terminal only: the command"},
                    "depends_on": {"type": "array", "items": {"type": "integer", "minimum": 1},
                                   "description": "1-based positions of earlier items this one needs"},
                }}}}})


def _action_tools(capabilities) -> list[ToolSpec]:
    reason = {"type": "string", "maxLength": 4000}
    return [
        ToolSpec("spawn_worker", "Add one work item on a capability.", {
            "type": "object", "required": ["capability", "task"], "additionalProperties": False, "properties": {
                "capability": {"type": "string", "enum": list(capabilities)},
                "task": {"type": "string", "minLength": 1, "maxLength": 4000},
                "command": {"type": "string", "maxLength": 4000}, "reason": reason}}),
        ToolSpec("await_worker", "Wait for a running worker.", _reason_only(reason)),
        ToolSpec("merge_canon", "Merge the finished results into the canon.", _reason_only(reason)),
        ToolSpec("complete", "End the run with its answer.", {
            "type": "object", "required": ["answer"], "additionalProperties": False,
            "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 20000}, "reason": reason}}),
        ToolSpec("block", "End the run: it cannot be done.", {
            "type": "object", "required": ["reason"], "additionalProperties": False,
            "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 4000}}}),
    ]


def _reason_only(reason: dict) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": {"reason": reason}}


def _one_call(tool_calls, allowed: set[str]) -> ToolCall:
    if not tool_calls:
        raise PolicyError("no_action", "the model answered without calling a tool")
    call = tool_calls[0]
    if call.name not in allowed:
        raise PolicyError("unknown_action", f"the model called {call.name!r}; expected one of {sorted(allowed)}")
    if not isinstance(call.arguments, dict) or "_unparsed" in call.arguments:
        raise PolicyError("malformed", f"the arguments of {call.name} are not a JSON object")
    return call


def _check(schema: dict, arguments: dict, name: str) -> None:
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path)
        raise PolicyError("malformed", f"malformed arguments for {name}{f' at {where}' if where else ''}: "
                                       f"{error.message[:300]}")


def _agenda(tool_calls, capabilities) -> Agenda:
    call = _one_call(tool_calls, {"set_agenda"})
    items_schema = dict(_agenda_tool(capabilities).parameters)
    # Unknown capabilities are dropped, not fatal: the agenda keeps only what exists.
    raw_items = call.arguments.get("items")
    if not isinstance(raw_items, list):
        raise PolicyError("malformed", "set_agenda needs items, a list")
    kept = [(position, item) for position, item in enumerate(raw_items, start=1)
            if isinstance(item, dict) and item.get("capability") in capabilities]
    dropped = tuple(str(item.get("capability") if isinstance(item, dict) else item)
                    for item in raw_items if not (isinstance(item, dict) and item.get("capability") in capabilities))
    _check(items_schema, {"items": [item for _, item in kept]}, "set_agenda")
    numbers = {position: number for number, (position, _) in enumerate(kept, start=1)}  # the model's -> ours
    entries = []
    for number, (_, item) in enumerate(kept, start=1):
        depends = tuple(sorted({numbers[d] for d in item.get("depends_on", []) if numbers.get(d, number) < number}))
        entries.append(AgendaEntry(item["capability"], item["task"], item.get("command", ""), depends))
    return Agenda(tuple(entries), dropped)


def _action(tool_calls, capabilities):
    tools = {tool.name: tool for tool in _action_tools(capabilities)}
    call = _one_call(tool_calls, set(tools))
    _check(tools[call.name].parameters, call.arguments, call.name)
    args = call.arguments
    if call.name == "spawn_worker":
        return SpawnWorker(args["capability"], args["task"], args.get("command", ""), args.get("reason", ""))
    if call.name == "await_worker":
        return AwaitWorker(args.get("reason", ""))
    if call.name == "merge_canon":
        return MergeCanon(args.get("reason", ""))
    if call.name == "complete":
        return Complete(args["answer"], args.get("reason", ""))
    return Block(args["reason"])


# --- the offline model's answers (deterministic; no key needed) ---------------------------------------------

_COMMAND = re.compile(r"`([^`]+)`")


class OfflineBootstrap:
    """One researcher item over the objective; a terminal item instead when the objective explicitly
    asks for the local shell and the terminal is offered (its command: the first `backticked` text)."""

    def __init__(self, objective: str, capabilities):
        self.objective, self.capabilities = objective, tuple(capabilities)

    def next_step(self, request):
        if TERMINAL in self.capabilities and explicitly_local_shell(self.objective):
            found = _COMMAND.search(self.objective)
            item = {"capability": TERMINAL, "task": self.objective, "command": found.group(1) if found else "ls -la"}
        else:
            item = {"capability": RESEARCHER, "task": self.objective}
        return ToolCall(f"offline-{request_digest(request)[:12]}", "set_agenda", {"items": [item]})


class OfflineDecide:
    """Complete once nothing is left to do (with the results as the answer); Block when every item
    failed or there is none."""

    def __init__(self, state: RuntimeState):
        self.state = state

    def next_step(self, request):
        done = [item for item in self.state.items if item.state == "done"]
        call_id = f"offline-{request_digest(request)[:12]}"
        if not done:
            return ToolCall(call_id, "block", {"reason": f"{OFFLINE_NOTICE} no agenda item finished"})
        answer = "\n\n".join(f"[{item.capability} {item.number}] {item.result}" for item in done)
        return ToolCall(call_id, "complete", {"answer": f"{OFFLINE_NOTICE} {answer}"[:20000],
                                              "reason": "every item is done"})


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
