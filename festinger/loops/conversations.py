"""Which conversation a proxied call belongs to, as the loop guard follows it.

A conversation is what the client says it is: its `X-Festinger-Session` header, else OpenAI's `user`
field. Without either, it is the growing history of one exchange, named by a fingerprint of its first
user message and its first answer (the assistant's first reply, text and tool calls; counted by the
guard with the second, the first turn it follows): the system prompt
is left out, so one that changes every turn (a timestamp) does not make every turn a new conversation,
and two callers who open alike are told apart by what the model answered each. Where every caller has a
key of its own (the API keys of the main port's mount), the key is part of every name, so two keys never
share a conversation; the own port's token is one secret shared by all its clients (and an OpenAI
client sends some key even where none is asked), so it names no one.

A call whose history holds no answer yet and which names no conversation is a one-shot request: the
guard follows it nowhere (no state is read or written; a repetition inside its answer is still cut),
so identical one-shot requests from many callers are never a loop. Its second turn carries the first
answer and so its name, and the guard follows it from there."""

from __future__ import annotations

import hashlib
import json
from contextvars import ContextVar
from dataclasses import dataclass

SESSION_MAX_CHARS = 128  # LoopEvent.session


@dataclass(frozen=True)
class ConversationName:
    name: str       # LoopEvent.session, the loop state's key
    named: bool     # the client named it (the header, `user`): counted as one conversation by learning too
    followed: bool  # the loop guard keeps its state: named, or its history holds an answer
    # Its name holds its first answer, so the guard follows it from its second turn and counts that
    # answer then (a fingerprinted conversation).
    first_answer_named: bool = False

    def as_dict(self) -> dict:
        return {"name": self.name, "named": self.named, "followed": self.followed,
                "first_answer_named": self.first_answer_named}


# Set by the proxy around a call (festinger.proxy.calls.session_context); None for a fire's calls.
proxied_conversation: ContextVar[ConversationName | None] = ContextVar("festinger_proxied_conversation",
                                                                         default=None)


def conversation_name(*, caller: str, session: str | None, user: str | None, messages: list[dict]) -> ConversationName:
    """The conversation of a proxied call: `session` (the header) or `user` as the client named it, else
    its history's fingerprint; `caller` (its own key's secret, "" when callers have none) scopes both. `messages` are
    the call's messages in Ollama's wire shape."""
    scope = f"k:{hashlib.sha256(caller.encode()).hexdigest()[:12]}:" if caller else ""
    given = session or user
    if given:
        return ConversationName(name=(scope + given)[:SESSION_MAX_CHARS], named=True, followed=True)
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    first_answer = next((m for m in messages if m.get("role") == "assistant"), None)
    opening = [first_user]
    if first_answer is not None:
        opening += [first_answer.get("content") or "", first_answer.get("tool_calls") or []]
    digest = hashlib.sha256(f"{scope}\x00{json.dumps(opening, sort_keys=True, default=str)}".encode()).hexdigest()
    return ConversationName(name=f"fp:{digest[:32]}", named=False, followed=first_answer is not None,
                            first_answer_named=True)
