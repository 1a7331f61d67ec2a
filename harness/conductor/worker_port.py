"""The worker port (seed 004): a capability call in, the worker's execution out. It maps the
harness's tool calls to what each worker kind does, keeps the worker's constraints, and traces every
tool call; it decides nothing for the run and spawns no other worker.

    researcher   a harness fire (harness.fires) over the task with the research tools only: the lake
                 (semantic, expand, ascend, deliberate, the lenses), web_search, plan and respond.
                 Its loop is the fire's, bounded by the harness's max turns per fire.
    terminal     the worker loop (worker_runtime) with one tool, shell, each call run in the
                 workspace's bubblewrap sandbox (terminal.command_run), bounded by the workspace's max_steps."""

from __future__ import annotations

from dataclasses import dataclass

from fathom.llm import ToolCall, ToolSpec
from fathom.llm.offline import OFFLINE_NOTICE, request_digest
from fathom.tracing import span
from harness.conductor.capabilities import RESEARCHER, TERMINAL
from harness.conductor.models import CapabilityCall, ConductorSettings
from harness.conductor.terminal import command_run
from harness.conductor.worker_runtime import worker_loop
from harness.fires.models import Fire
from harness.fires.services import fire_create, fire_run
from harness.fires.tools import tools_for
from harness.fires.tools.base import MAIN

RESEARCH_TOOLS = frozenset({"plan", "semantic", "expand", "ascend", "deliberate", "state", "pattern", "time",
                            "relate", "web_search", "respond"})
TERMINAL_ROLE = "terminal"
TERMINAL_SYSTEM = """\
You are the terminal worker of a conductor run. Carry out the task with the shell tool: each command runs \
with /bin/sh in a sandbox whose working directory is the workspace's folder, /workspace (writable, kept between \
commands), with a read-only system (/usr), a fresh /tmp, a timeout and resource limits, and no network unless \
the workspace allows it. Run only what the task asks for. When done, call finish with what the commands showed."""


@dataclass(frozen=True)
class WorkerOutcome:
    ok: bool
    result: str
    model_calls: int = 0


class WorkerBusy(Exception):
    """The worker's underlying fire is being run by another runner: try again later."""


def execute(*, call: CapabilityCall, limits: ConductorSettings) -> WorkerOutcome:
    """Carry out the capability call on its worker; resumes where an earlier attempt stopped."""
    if call.worker == RESEARCHER:
        return _researcher(call)
    if call.worker == TERMINAL:
        return _terminal(call, limits)
    return WorkerOutcome(False, f"no worker for capability {call.worker!r}")


def research_disabled_tools() -> list[str]:
    """Every tool of a fire's main loop that is not a research tool."""
    return sorted(tool.name for tool in tools_for(phase=MAIN) if tool.name not in RESEARCH_TOOLS)


# --- researcher -------------------------------------------------------------------------------------------

def _researcher(call: CapabilityCall) -> WorkerOutcome:
    fire = fire_create(workspace=call.run.workspace, mode=Fire.Mode.REACTIVE, question=_research_question(call),
                       disabled_tools=research_disabled_tools(), spawned_by=call.research_key)
    if call.fire_id != fire.pk:
        CapabilityCall.objects.filter(pk=call.pk).update(fire=fire)
    fire = fire_run(fire_id=fire.pk)
    if not fire.is_terminal:
        raise WorkerBusy(f"fire {fire.pk} of {call.call_id} is run by {fire.runner}")
    if fire.status != Fire.Status.FINISHED:
        return WorkerOutcome(False, f"the research fire ended {fire.status}: {fire.error or fire.stop_reason}",
                             fire.model_calls)
    cited = fire.response.get("cited_ids", [])
    body = fire.response.get("body", "")
    return WorkerOutcome(True, body + (f"\n(cited: {', '.join(cited)})" if cited else ""), fire.model_calls)


def _research_question(call: CapabilityCall) -> str:
    task, objective = call.item.input.get("task", ""), call.run.objective
    if objective.strip() in task:
        return task
    return f"{task}\n\n(Research for the objective: {objective[:2000]})"


# --- terminal ---------------------------------------------------------------------------------------------

SHELL = ToolSpec("shell", "Run one shell command in the workspace's folder (/workspace, sandboxed); returns its exit "
                          "code and output.", {
    "type": "object", "required": ["command"], "additionalProperties": False,
    "properties": {"command": {"type": "string", "minLength": 1, "maxLength": 4000}}})


def _terminal(call: CapabilityCall, limits: ConductorSettings) -> WorkerOutcome:
    if not limits.terminal_enabled:
        return WorkerOutcome(False, "refused: the terminal is not enabled in this workspace (conductor settings)")
    workspace = call.run.workspace
    command = call.item.input.get("command", "")

    def run_tool(tool_call: ToolCall) -> str:
        with span("worker.tool", call_id=tool_call.id, tool=tool_call.name, arguments=tool_call.arguments) as traced:
            if tool_call.name != "shell":
                traced.set(ok=False, error="unknown tool")
                return f"error: unknown tool {tool_call.name!r}; the tools are shell and finish"
            outcome = command_run(workspace=workspace, limits=limits, command=tool_call.arguments.get("command", ""))
            traced.set(ok=outcome.ok, exit_code=outcome.exit_code, timed_out=outcome.timed_out,
                       refused=outcome.refused, output_chars=len(outcome.output))
            return outcome.text()

    task = call.item.input.get("task", "") + (f"\nCommand: {command}" if command else "")
    result = worker_loop(call=call, role=TERMINAL_ROLE, system=TERMINAL_SYSTEM, task=task, tools=[SHELL],
                         run_tool=run_tool, max_steps=limits.max_steps, offline_policy=OfflineTerminal(command))
    call.refresh_from_db(fields=["model_calls"])
    return WorkerOutcome(result.ok, result.summary, call.model_calls)


class OfflineTerminal:
    """The offline model's terminal worker: run the item's command once, then finish with its output."""

    def __init__(self, command: str):
        self.command = command

    def next_step(self, request):
        call_id = f"offline-{request_digest(request)[:12]}"
        ran = [m for m in request.messages if m.role == "tool"]
        if not ran and self.command:
            return ToolCall(call_id, "shell", {"command": self.command})
        output = ran[-1].content if ran else "no command was given"
        return ToolCall(call_id, "finish", {"summary": f"{OFFLINE_NOTICE} {output}"})
