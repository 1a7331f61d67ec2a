"""The focus pre-pass (seed 000's "Focus pre-pass for autonomous sittings"): one small model call,
role `focus`, over the substrate signals (recent activity, salient threads, mood deltas, dormant
patterns, the pressure breakdown) names what an autonomous Sit is about; its output is the Sit's
first prompt. When the call fails, a deterministic focus is written from the top pressure signal.
Offline, the fallback is the model's answer, through the offline provider's policy hook."""

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from fathom.llm import LLMError, Message, ToolCall, ToolSpec, complete
from harness.autonomy.pressure import DORMANT_DAYS, MOOD_SHIFT_TAG, OWN_SOURCES, SIGNALS
from harness.runtime.models import Session
from lake.models import PROVENANCE_TAG, QA_MARKER_TAG, Delta

FOCUS_TOOL = ToolSpec(
    "set_focus", "Name the focus of your coming Sit: one or two sentences, a question you will sit with.",
    {"type": "object", "required": ["focus"], "additionalProperties": False,
     "properties": {"focus": {"type": "string", "minLength": 1}, "reason": {"type": "string"}}})
FOCUS_PROMPT = """\
You are choosing the focus of a Sit you are about to start by yourself (nobody asked you anything). \
Below are the signals of your substrate: what happened recently, the threads that are active, how your mood \
moved, what has gone quiet, and why the pressure to sit is high. Pick ONE specific thing worth sitting with \
and call set_focus with it, phrased as the prompt you will answer to yourself. Be concrete: name the ids or \
threads it is about."""
RECENT = 8
MAX_FOCUS_CHARS = 2000


@dataclass(frozen=True)
class Focus:
    text: str
    source: str  # "model" or "fallback"
    error: str = ""
    tokens: int = 0


def focus_choose(*, workspace, breakdown: dict) -> Focus:
    """The Sit's first prompt: the focus model's choice (exactly one model call), or the
    deterministic focus of the top signal when that call fails or names nothing."""
    substrate = substrate_signals(workspace=workspace)
    fallback = focus_fallback(breakdown=breakdown, substrate=substrate)
    try:
        completion = complete(workspace=workspace, role="focus", tools=[FOCUS_TOOL], tool_choice="required",
                              messages=[Message.system(FOCUS_PROMPT),
                                        Message.user(render_signals(breakdown=breakdown, substrate=substrate))],
                              offline_policy=_FixedFocus(fallback))
    except LLMError as exc:
        return Focus(text=fallback, source="fallback", error=f"{exc.code}: {exc}"[:1000])
    tokens = completion.usage.input_tokens + completion.usage.output_tokens
    chosen = next((call.arguments.get("focus", "") for call in completion.tool_calls
                   if call.name == FOCUS_TOOL.name and isinstance(call.arguments, dict)), "") or completion.text
    chosen = " ".join(str(chosen).split())
    if not chosen:
        return Focus(text=fallback, source="fallback", error="the focus model named nothing", tokens=tokens)
    return Focus(text=chosen[:MAX_FOCUS_CHARS], source="model", tokens=tokens)


def substrate_signals(*, workspace) -> dict:
    """What the focus reads besides the pressure: recent moments, active threads, mood deltas and
    dormant provenances, a few of each (four small indexed queries)."""
    now = timezone.now()
    lake = Delta.objects.filter(workspace=workspace)
    recent = list(lake.exclude(source__in=OWN_SOURCES).order_by("-created_at").values_list("id", "content")[:RECENT])
    moods = list(lake.filter(tags__contains=[MOOD_SHIFT_TAG]).order_by("-created_at")
                 .values_list("id", "content")[:5])
    dormant = list(lake.filter(tags__contains=[PROVENANCE_TAG], created_at__lt=now - timedelta(days=DORMANT_DAYS))
                   .exclude(tags__contains=[QA_MARKER_TAG]).order_by("-created_at").values_list("id", "content")[:5])
    threads = list(Session.objects.filter(workspace=workspace, status=Session.Status.OPEN)
                   .exclude(tag="autonomy").order_by("-updated_at").values_list("tag", "title")[:5])
    return {"recent": recent, "moods": moods, "dormant": dormant, "threads": threads}


def render_signals(*, breakdown: dict, substrate: dict) -> str:
    ranked = sorted(breakdown.items(), key=lambda item: -item[1]["contribution"])
    parts = ["Pressure by signal (raw reading, share of the pressure):"]
    parts += [f"- {name}: {entry['raw']} ({entry['contribution']:.2f})" for name, entry in ranked]
    for title, key in (("Recent activity", "recent"), ("Mood deltas", "moods"), ("Dormant patterns", "dormant")):
        if substrate[key]:
            parts.append(f"{title}:\n" + "\n".join(f"- [{i}] {_line(c)}" for i, c in substrate[key]))
    if substrate["threads"]:
        parts.append("Salient threads:\n" + "\n".join(f"- {tag}: {title}" for tag, title in substrate["threads"]))
    return "\n\n".join(parts)


def focus_fallback(*, breakdown: dict, substrate: dict) -> str:
    """A focus written without a model, from the signal that contributes most to the pressure."""
    top = max(breakdown, key=lambda name: breakdown[name]["contribution"], default="")
    recent = "; ".join(f"[{i}] {_line(c, 80)}" for i, c in substrate["recent"][:3])
    raw = breakdown.get(top, {}).get("raw", 0)
    if top == "unprovenanced" and recent:
        count = f"{raw:g}" if raw < SIGNALS[0].saturation else f"At least {raw:g}"  # the reading stops there
        return (f"{count} moments have accumulated since you last named a stretch of your lake, among them "
                f"{recent}. Which of them belong together, and what would you call that stretch?")
    if top == "dormant_patterns" and substrate["dormant"]:
        i, content = substrate["dormant"][0]
        return f"[{i}] {_line(content, 120)} has gone quiet for {DORMANT_DAYS} days. Is it finished, or waiting?"
    if top == "mood_shift" and substrate["moods"]:
        i, content = substrate["moods"][0]
        return f"Your mood moved today ([{i}] {_line(content, 120)}). What moved it, and does it matter?"
    if top == "salient_threads" and substrate["threads"]:
        tags = ", ".join(tag for tag, _ in substrate["threads"])
        return f"Several conversations were active today ({tags}). What connects them?"
    if top == "pending_conflicts":
        return f"{raw:g} contradictions wait in your world model. Which one matters most, and why?"
    if top == "duplicate_markers":
        return "The same questions keep being asked. What do the repeated questions say about what is missing?"
    if top == "directives":
        return f"{raw:g} of your directives are still open. Which one do you want to take up next, and how?"
    since = f" Lately: {recent}." if recent else ""
    return f"It has been a while since you last sat.{since} What has changed, and what wants your attention?"


class _FixedFocus:
    """The offline provider's answer to the focus call: the deterministic focus, as a set_focus call."""

    def __init__(self, focus: str):
        self.focus = focus

    def next_step(self, request):
        return ToolCall(id="offline-focus", name=FOCUS_TOOL.name, arguments={"focus": self.focus})


def _line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
