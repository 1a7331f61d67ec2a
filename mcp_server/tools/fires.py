"""The tools that run Fathom's agent: ask (a question answered by a session's fire, through the quality
harness) and introspect (Fathom asked about itself). Both follow their fire to its end, reporting each
move as an MCP progress notification; the client's cancellation of the call cancels the fire."""

from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from fathom.auth import KeyPrincipal
from fathom.threads import in_thread
from harness.fires.api import IntrospectView
from harness.fires.models import Fire
from harness.fires.selectors import fire_citations, fire_get, fire_of_message
from harness.fires.services import fire_cancel, fire_create, fire_enqueue
from harness.runtime.api import SessionMessagesView
from harness.runtime.selectors import session_get
from harness.runtime.services import message_send, message_withdraw, session_create
from mcp_server.calls import api_errors, caller_allowed, tool_result, validated

POLL_SECONDS = 0.25
# After a cancellation, how long to look for the fire of a message a turn has taken (it is created at once).
CANCEL_FIND_SECONDS = 10.0
MAX_WAIT_SECONDS = 3600


async def ask(question: Annotated[str, Field(description="the question, as you would ask a colleague")],
              ctx: Context,
              session_id: Annotated[str, Field(description="continue this session (its id, from an earlier "
                                                           "answer); a new session when absent")] = "",
              iterations: Annotated[int | None, Field(ge=1, le=5, description="deep synthesis: make this many "
                                                                              "attempts and keep the best")] = None,
              wait_seconds: Annotated[int, Field(ge=1, le=MAX_WAIT_SECONDS, description="how long to wait for the "
                                                                                       "answer")] = 600,
              ) -> CallToolResult:
    """Ask Fathom: its agent answers from its memory (searching, reading, reasoning), and the quality
    harness checks the answer before it is given. Answers the text, its verdict (passed, degraded with
    the reasons, or unchecked when the workspace's checks are off) and the deltas it cites. Reports its
    progress as it runs; cancelling the call cancels the answer. Takes seconds to minutes."""
    with api_errors():
        caller = caller_allowed(SessionMessagesView, "POST")
        fields = validated(SessionMessagesView.Input, {"content": question, **(
            {"iterations": iterations} if iterations else {})})
        session_id, trigger_id = await in_thread(question_send)(caller=caller, session_id=session_id, fields=fields)

        async def find() -> Fire | None:
            return await in_thread(fire_of_message)(workspace=caller.workspace, trigger_id=trigger_id)

        async def cancel() -> None:
            if await in_thread(message_withdraw)(session_id=session_id, trigger_id=trigger_id,
                                                 note="withdrawn: its MCP client cancelled the call"):
                return
            with anyio.move_on_after(CANCEL_FIND_SECONDS):  # a turn took it: its fire is on its way
                while (fire := await find()) is None:
                    await anyio.sleep(POLL_SECONDS)
                await in_thread(fire_cancel)(fire=fire)

        fire = await fire_followed(ctx, find=find, cancel=cancel, wait_seconds=wait_seconds)
        if fire is None:
            return tool_result({"session_id": session_id, "status": "queued", "answer": "",
                                "note": f"no worker took the question within {wait_seconds} s"})
        return await in_thread(answer_of)(fire)


async def introspect(question: Annotated[str, Field(description="what to ask Fathom about itself")],
                     ctx: Context,
                     disabled_tools: Annotated[list[str] | None, Field(description="tools the fire may not use")]
                     = None,
                     wait_seconds: Annotated[int, Field(ge=1, le=MAX_WAIT_SECONDS, description="how long to wait")]
                     = 600,
                     ) -> CallToolResult:
    """Fathom asks itself: a scoped introspective fire over its own memory and state (what it knows,
    what it did, what it is unsure of), with its side-effect tools disabled. Answers its card: the body
    and the ids it cites. Reports progress; cancelling the call cancels the fire."""
    with api_errors():
        caller = caller_allowed(IntrospectView, "POST")
        fields = validated(IntrospectView.Input, {"question": question, "disabled_tools": disabled_tools or []})
        fire = await in_thread(introspection_start)(caller=caller, fields=fields)

        async def find() -> Fire:
            return await in_thread(fire_get)(workspace=caller.workspace, fire_id=fire.pk)

        async def cancel() -> None:
            await in_thread(fire_cancel)(fire=fire)

        fire = await fire_followed(ctx, find=find, cancel=cancel, wait_seconds=wait_seconds)
        return tool_result({"fire_id": str(fire.pk), "status": fire.status, "card_id": fire.writes.get("card"),
                            "body": fire.response.get("body", ""), "cited_ids": fire.response.get("cited_ids", []),
                            "resource": f"fathom://fires/{fire.pk}"}, text=fire.response.get("body") or None)


async def fire_followed(ctx: Context, *, find: Callable[[], Awaitable[Fire | None]],
                        cancel: Callable[[], Awaitable[None]], wait_seconds: float) -> Fire | None:
    """The fire `find` reads, once it has ended or `wait_seconds` have passed, each change of its state
    reported as progress on the way. Cancelled (the client cancelled the call), it cancels the fire."""
    step, said = 0, ""
    deadline = anyio.current_time() + wait_seconds
    try:
        while True:
            fire = await find()
            state = fire_state(fire)
            if state != said:
                step, said = step + 1, state
                await ctx.report_progress(step, None, state)
            if (fire is not None and fire.is_terminal) or anyio.current_time() >= deadline:
                return fire
            await anyio.sleep(POLL_SECONDS)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await cancel()
        raise


def fire_state(fire: Fire | None) -> str:
    if fire is None:
        return "queued: waiting for a worker to take the question"
    if fire.is_terminal:
        return f"{fire.status}: {fire.stop_reason or fire.status}"
    return f"{fire.status}: {fire.phase}, {fire.model_calls} model calls"


def question_send(*, caller: KeyPrincipal, session_id: str, fields: dict) -> tuple[str, str]:
    """Send the question to the session named (else a new one): (session id, message id)."""
    if session_id:
        session = session_get(workspace=caller.workspace, session_id=session_id)
    else:
        session = session_create(workspace=caller.workspace, title=f"MCP: {fields['content'][:80]}")
    iterations = fields.get("iterations")
    trigger = message_send(session=session, content=fields["content"], author=caller.actor_id, source="mcp",
                           payload={"iterations": iterations} if iterations else None)
    return str(session.pk), str(trigger.pk)


def introspection_start(*, caller: KeyPrincipal, fields: dict) -> Fire:
    fire = fire_create(workspace=caller.workspace, mode=Fire.Mode.INTROSPECTIVE, question=fields["question"],
                       disabled_tools=fields["disabled_tools"])
    fire_enqueue(fire=fire)
    return fire


def answer_of(fire: Fire) -> CallToolResult:
    """The ended fire's answer as `ask` gives it: the text, its verdict, what it cites."""
    citations = [{"id": c["id"], "content": c["content"], "tags": c["tags"]}
                 for c in fire_citations(fire=fire) if c["verb"] == "cited" and c["found"]]
    answer = fire.response.get("body", "")
    body = {"fire_id": str(fire.pk), "session_id": str(fire.session_id), "status": fire.status,
            "stop_reason": fire.stop_reason, "answer": answer, "verdict": fire.verdict_detail,
            "citations": citations, "resource": f"fathom://fires/{fire.pk}"}
    verdict = fire.verdict_detail
    text = "\n".join([answer or f"(no answer: the fire {fire.status})", "",
                      f"verdict: {verdict['status']}" + (f" ({'; '.join(verdict['reasons'])})"
                                                         if verdict["reasons"] else ""),
                      *[f"[{c['id']}] {c['content'][:200]}" for c in citations]])
    return tool_result(body, text=text)


def register(server: MCPServer) -> None:
    server.add_tool(ask, annotations=ToolAnnotations(title="Ask Fathom", read_only_hint=False, destructive_hint=False,
                                                     open_world_hint=False))
    server.add_tool(introspect, annotations=ToolAnnotations(title="Introspect", read_only_hint=False,
                                                            destructive_hint=False, open_world_hint=False))
