"""What the model reads: the system message (seed 000's "How the harness is told to work"), the
river's earlier conversation (older parts compacted), the fire's messages, and its journal, with
the active plan at the end. Tool results are stored whole; only rendering compacts old ones."""

import json
import re

from fathom.llm import Message, ToolCall
from harness.fires.journal import JournalTurn
from harness.fires.models import Fire
from harness.fires.tools.base import MAIN, REGISTRY, tools_for
from harness.fires.tools.plan import render as render_plan
from harness.runtime.models import Trigger
from harness.runtime.profiles import profile_copy
from harness.runtime.selectors import agent_profile_default_get
from lake.selectors import orient_current
from proposals.helper_jobs import helper_hosts

RECENT_TURNS_WHOLE = 6  # the last turns' tool results are always shown in full
COMPACT_RESULT_CHARS = 600
COMPACTED_HISTORY_ENTRIES = 40

GUIDANCE = """\
How you work:
- You answer through tools. Each turn, call one or more tools or `respond`. The loop continues until you respond.
- Visible-everything: you see the full standpoint, the full conversation and full tool results. Nothing is \
silently truncated; if a part was compacted it says so.
- The tools are peers: `semantic` recalls by meaning; `expand` walks down from a provenance to its constituents; \
`ascend` walks up to what contains a delta; the lenses `state`, `pattern`, `time` and `relate` take \
action="help" to list what they can do; `web_search` searches the web (news, what is outside the lake); \
`deliberate` hears several voices; `introspect` asks yourself a scoped \
question with a full child fire; `view_full` shows one delta whole when a result cut it short.
- Acting: `orient_shift` when the conversation reveals a broader shift in the operator's interests (the orient \
regenerates in the background); `dispatch_helper` and `mint_routine` only draft proposals that an operator \
approves before anything runs.
- Synthesis guard: for comparison, connection or synthesis questions ("X and Y", "compare", "connections \
between") call `plan(question)` on turn 1, then work through the steps, declaring plan_step:<n> on each call.
- Provenance is NOT in this loop: consolidation (naming episodes, topics, eras) happens in a separate review pass \
after you respond. Here, only answer.
- Cite what you use: ids appear as [<id>] in results; put the ones you relied on in `cited_ids`, and the ones you \
judged wrong or irrelevant in `dropped_ids`. Never invent an id.
- Image discipline: never describe an image without having called `see_image` on it in this fire.
- Capture preferences: when the user expresses a preference about feed content, record it with `engage_feed`; \
do not only acknowledge it in prose.
- Files and background work: `fs_list`, `fs_read`, `fs_write` and `fs_replace` work on managed://agent/<id>/<file> \
and managed://user/<id>/<file> (profile files) and on fs://<path> (the workspace folder); each starts a background \
task and returns its id at once; the result comes back as a TaskDone note in a later turn. `wait` sets a timer the \
same way; `task_cancel` stops a task.
- Messages: tick each user message off with `mark_addressed` once dealt with; anything left unaddressed fires \
again. A single message is addressed by your respond.
- Self-continuation: set `next_prompt` on respond only when one layer has been surfaced and another wants \
attention; most fires omit it.
- Lean reply: for a simple chat message, just `respond` with a `body`."""

MODE_NOTES = {
    Fire.Mode.REACTIVE: "Mode: reactive. Answer the user's message(s).",
    Fire.Mode.SELF_DIRECTING: "Mode: self-directing (a Sit). The prompt is your own previous utterance: respond "
                              "to it. If a directive crystallizes (what you want to look into next), name it in "
                              "respond's `directive`.",
    Fire.Mode.INTROSPECTIVE: "Mode: introspective. Answer the scoped question with a full fire; your answer "
                             "returns to the caller and is written as your card.",
}


# Seed 000's standpoint trim: a multi-domain synthesis question is answered from what the fire recalls
# now, so the standpoint's committed lists (long-term memory, the orient) are left out of its prompt
# and the model cannot paraphrase them instead.
SYNTHESIS_QUESTION = re.compile(r"\b(compare|comparing|comparison|contrast|versus|vs\.?|connections? between|"
                                r"relationship between|relate[sd]? to|in common)\b", re.IGNORECASE)
STANDPOINT_TRIMMED = ("# Standpoint (trimmed: a synthesis question)\nYour long-term memory and current orient are "
                      "left out of this fire so you answer from what you recall now; reach them with the tools.")


def is_synthesis(question: str) -> bool:
    return bool(SYNTHESIS_QUESTION.search(question or ""))


def system_message(fire: Fire) -> str:
    agent = (fire.session.agent_profile_copy if fire.session_id else {}) or _default_agent(fire)
    user = fire.session.user_profile_copy if fire.session_id else {}
    trimmed = is_synthesis(fire.question)
    parts = []
    for title, key in (("IDENTITY.md", "identity_md"), ("SOUL.md", "soul_md"), ("AGENTS.md", "agents_md"),
                       ("Long-term memory", "memory")):
        if agent.get(key) and not (trimmed and key == "memory"):
            parts.append(f"# {title}\n{agent[key].strip()}")
    if user:
        for title, key in (("USER.md", "user_md"), ("What you remember about the user", "memory")):
            if user.get(key):
                parts.append(f"# {title}\n{user[key].strip()}")
        if user.get("preferences"):
            parts.append(f"# User preferences\n{json.dumps(user['preferences'], ensure_ascii=False)}")
    if trimmed:
        parts.append(STANDPOINT_TRIMMED)
    elif orient := orient_current(workspace=fire.workspace, river=fire.session.tag if fire.session_id else "",
                                  before=fire.created_at):
        parts.append(f"# Current orient [{orient.id}] (what the operator is oriented toward; orient_shift "
                     f"regenerates it)\n{orient.content.strip()}")
    parts.append(GUIDANCE)
    parts.append(MODE_NOTES[Fire.Mode(fire.mode)])
    if fire.session_id:
        parts.append(f"This conversation is the river `{fire.session.tag}`: its earlier messages are above yours.")
    pending = [m for m in fire.work_set.get("messages", []) if m.get("id")]
    if pending:
        lines = "\n".join(f"- [{m['id']}] {m.get('author') or 'user'}: {_one_line(m['content'], 120)}" for m in pending)
        parts.append(f"Unaddressed messages of this fire (ids for mark_addressed):\n{lines}")
    offered = [t.name for t in tools_for(phase=MAIN, disabled=fire.disabled_tools)]
    parts.append(f"Your tools in this fire: {', '.join(offered)}.")
    if fire.disabled_tools:
        parts.append(f"Not available in this fire: {', '.join(fire.disabled_tools)}.")
    if "dispatch_helper" in offered:
        parts.append(_hosts_block(fire))
    return "\n\n".join(parts)


def render_preamble(fire: Fire, *, history_limit: int) -> list:
    """What every turn of the fire starts with (the system message, the river, the work set): the
    same for the whole fire, so the loop renders it once."""
    messages = [Message.system(system_message(fire))]
    messages += _history(fire, history_limit)
    for entry in fire.work_set.get("messages", []):
        messages.append(_said(entry))
    return messages


def render_messages(fire: Fire, turns: list[JournalTurn], *, history_limit: int, forced: bool, max_turns: int,
                    preamble: list | None = None) -> list:
    messages = list(preamble if preamble is not None else render_preamble(fire, history_limit=history_limit))
    for index, entry in enumerate(turns):
        whole = index >= len(turns) - RECENT_TURNS_WHOLE
        turn, calls = entry.turn, entry.results
        messages.append(Message.assistant(turn.text, tool_calls=[
            ToolCall(c["id"], c["name"], c["arguments"] if isinstance(c["arguments"], dict) else {})
            for c in turn.tool_calls]))
        opened = []
        for call in turn.tool_calls:
            recorded = calls.get(call["id"])
            result = recorded.result if recorded else "(no result recorded)"
            tool = REGISTRY.get(call["name"])
            if whole and recorded and recorded.ok and tool and tool.images:
                opened += tool.images(result)
            if not whole and len(result) > COMPACT_RESULT_CHARS:
                result = (f"{result[:COMPACT_RESULT_CHARS]}\n[compacted for the prompt budget: {len(result)} chars "
                          f"in all; the full result is in the fire's journal]")
            messages.append(Message.tool(call["id"], result, name=call["name"]))
        if opened:  # tool messages carry text only: the opened images follow them as a user part
            names = ", ".join(image.media_hash for image in opened)
            messages.append(Message.note(f"the image(s) you opened with see_image: {names}", images=opened))
    if fire.plan:
        messages.append(Message.note(f"active plan:\n{render_plan(fire.plan)}"))
    if forced:
        messages.append(Message.note(f"the turn cap ({max_turns}) is reached: call respond now with what "
                                     "you have, saying what is left open."))
    return messages


def _history(fire: Fire, limit: int) -> list:
    """The river before this fire: user messages and the agent's answers, the last `limit` whole,
    the ones before compacted into one note."""
    if not fire.session_id or limit <= 0:
        return []
    earlier = (Fire.objects.filter(session_id=fire.session_id, created_at__lt=fire.created_at, depth=0,
                                   status=Fire.Status.FINISHED)
               .order_by("-created_at").values_list("work_set", "response")[: limit + COMPACTED_HISTORY_ENTRIES])
    entries = []
    for work_set, response in reversed(earlier):
        entries += [{"role": "user", **m} for m in work_set.get("messages", [])]
        if response.get("body"):
            entries.append({"role": "assistant", "content": response["body"]})
    older, recent = entries[:-limit], entries[-limit:]
    rendered = []
    if older:
        lines = "\n".join(f"- {entry['role']}: {_one_line(entry['content'], 160)}"
                          for entry in older[-COMPACTED_HISTORY_ENTRIES:])
        rendered.append(Message.note(f"earlier in this conversation (compacted, {len(older)} "
                                     f"messages):\n{lines}"))
    for entry in recent:
        rendered.append(Message.assistant(entry["content"]) if entry["role"] == "assistant" else _said(entry))
    return rendered


def _said(entry: dict) -> Message:
    """A work set's message as the model reads it: a machine trigger's notice (a heartbeat, a task
    done) is a harness note, asked by no one; anything else is said by its author."""
    if entry.get("source") in Trigger.MACHINE_KINDS:
        return Message.note(entry["content"])
    return Message.user(entry["content"])


def _hosts_block(fire: Fire) -> str:
    hosts = sorted(helper_hosts(workspace=fire.workspace))
    if not hosts:
        return "Helper hosts for dispatch_helper: none are configured (a dispatch would be refused)."
    return f"Helper hosts for dispatch_helper: {', '.join(hosts)}."


def _one_line(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _default_agent(fire: Fire) -> dict:
    return profile_copy(agent_profile_default_get(workspace=fire.workspace))
