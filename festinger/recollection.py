"""Recollections (seed 002, "Reading — spontaneous prompt enrichment"): what the world model knows
about the salient concepts of a text, as a `<recollection>` block at the start of the system message.

`recollection_for(workspace_id=..., text=...)` is the service (REST and the proxy call it);
`RecollectionMiddleware` runs it around every model call (settings.FATHOM_MODEL_MIDDLEWARE), so a
fire's calls and a proxied request get the same treatment. Per call, from the cache only:

1. tokenise the text; count each token's encounter (saliency = ln(encounter_count)): in a model call,
   the conversation's own words only, each message once (festinger/learning.py);
2. for each concept whose priority (festinger.cache.model.priority: saliency decayed by the time since
   it was last seen, plus its novelty) is at or above the read threshold, highest first, the canonical
   recollection query's semantics:
   the concept's own edges (depth 1), confidence >= the floor, confirmed within the recency window,
   dimensions in descending id order; `[dim?]` where a conflict is pending in that dimension;
3. a salient concept with no edge at all gets the zero-hit prompt (teach it with iknowthat, over REST
   or `fathom festinger iknowthat`), unless it is an ordinary word (in the dictionary, or a regular
   form of one: `nightly`);
4. the cue patterns of the text become facts (source `inferred`, no threshold) and concepts that
   crossed the write threshold go to the writer: both on the `memory` queue, never on this path.

What a prompt received is kept in its trace: a `festinger.recollection` event in the call's span (the
block, the concepts recalled and unknown, the conversation), written once the call is answered, since
only then is a proxied Ollama call inside its span (festinger/proxy/calls.py).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from celery import signature
from django.db import transaction
from redis.exceptions import RedisError

from fathom.llm.types import Message
from fathom.tracing import event
from festinger import cache
from festinger.learning import (
    SeenMarks,
    conversation_key,
    conversation_messages,
    reply_unseen,
    said,
    seen_marks_send,
    writer_calls_left,
)
from festinger.loops.guard import conversation_of
from festinger.text import Triple, cues, normalise, ordinary, tokenize

log = logging.getLogger(__name__)

# Teaching Fathom a fact, with what it ships: the REST call, the command on the server, or the MCP tool.
ZERO_HIT = ("? {token}: no recollection. If it names something real, teach Fathom what it is before proceeding:\n"
            "  POST /v1/festinger/iknowthat {{\"fact\": \"{token} -isa <parent> in context of <dimension>\"}}\n"
            "  or: python manage.py fathom festinger iknowthat '{token} -ispart <system> in context of <dimension>'"
            " --workspace <slug>\n"
            "  or, as an MCP client: the iknowthat tool")
# A cue restating a fact the world holds is sent again (it confirms the edge) at most this often.
RECONFIRM_SECONDS = 24 * 3600
_RECENT_CUES_MAX = 10_000
RECOLLECTION_EVENT = "festinger.recollection"
BLOCK_RECORDED_CHARS = 4000


@dataclass(frozen=True)
class Recollection:
    """What a text recalls. `block` is empty when there is nothing to inject."""

    block: str = ""
    recalled: tuple[str, ...] = ()     # concepts rendered with their edges
    unknown: tuple[str, ...] = ()      # salient concepts the world has no edge for (zero hits)
    salient: tuple[tuple[str, float], ...] = ()
    to_write: tuple[str, ...] = ()     # concepts sent to the writer by this call
    cues: tuple[Triple, ...] = field(default=())

    def as_dict(self) -> dict:
        return {"block": self.block, "recalled": list(self.recalled), "unknown": list(self.unknown),
                "salient": [{"token": token, "saliency": round(value, 4)} for token, value in self.salient]}


def recollection_for(*, workspace_id: int, text: str = "", texts=(), counted=None, learn: bool = True) -> Recollection:
    """The recollection for `text` (or several `texts`). `counted` are the texts whose tokens count as
    encounters (default: all of them); with `learn=False` nothing is counted, written or queued: the
    block as it would be injected now (the REST preview)."""
    world = cache.world(workspace_id)
    if world is None:
        return Recollection()
    texts = [text, *texts] if text else list(texts)
    return recollect(world, texts, texts if counted is None else counted, learn=learn)


def recollect(world: cache.World, texts, counted, *, learn: bool = True, conversation: str | None = None,
              marked=()) -> Recollection:
    """`recollection_for` on a synced World; the writes it queues count against `conversation`'s cap.
    `marked` are texts marked seen whose answer is still unread (`SeenMarks`): rendered as counted,
    they are learned from by `learn_from` once it is read."""
    salient = _counted_salient(world, texts, counted if learn else (), marked)
    block, recalled, unknown = render(world, salient[: world.settings.max_concepts])
    learned = _learned(world, salient, counted, conversation) if learn else Recollection()
    return replace(learned, block=block, recalled=recalled, unknown=unknown, salient=tuple(salient))


def learn_from(world: cache.World, texts, counted, *, conversation: str | None) -> Recollection:
    """Count `counted` and learn from them (cues, concepts for the writer) as `recollect` does, without
    rendering a block: the unseen texts of marks read after the block was sent."""
    return _learned(world, _counted_salient(world, texts, counted), counted, conversation)


def _counted_salient(world: cache.World, texts, counted, marked=()) -> list[tuple[str, float]]:
    """Count each of `counted`, then the salient concepts of `texts` (`marked` counted in, not stored)."""
    if len(texts) == 1 and counted == texts and not marked:  # one text, read and counted (the common case)
        candidates = world.count(texts[0])
    else:
        for item in counted:
            world.count(item)
        candidates = world.candidates([tokenize(item) for item in texts])
    pending = Counter(token for item in marked for token in tokenize(item)) if marked else None
    return world.salient(candidates, pending=pending)


def _learned(world: cache.World, salient, counted, conversation: str | None) -> Recollection:
    # The write threshold is on the seed's saliency (how often a concept was seen), not on the priority.
    to_write = world.to_write([(token, world.saliency(token)) for token, _priority in salient])
    triples = tuple(triple for item in counted for triple in cues(item))
    learned = Recollection(to_write=tuple(to_write), cues=triples)
    _enqueue(world, learned, texts=counted, conversation=conversation)
    return learned


def render(world: cache.World, salient, now: float | None = None) -> tuple[str, tuple, tuple]:
    """The `<recollection>` block for these (token, saliency) pairs: concepts with edges first, in the
    order given, then the zero hits. Dimensions themselves are never listed."""
    settings = world.settings
    now = time.time() if now is None else now
    cutoff = now - settings.recency_days * 86400
    floor = settings.confidence_floor
    pending = world.pending_conflicts
    hits, recalled, unknown = [], [], []
    for token, _value in salient:
        concept_id = world.concept_id(token)
        if concept_id in world.dimensions:
            continue
        edges = world.urd_by_concept.get(concept_id, ()) if concept_id is not None else ()
        if not edges:
            if not ordinary(token, world.dictionary):  # "nightly" is a word, not a concept to teach
                unknown.append(token)
            continue
        parts = [f"[{edge.dimension}{'?' if (concept_id, edge.dim_id) in pending else ''}] {edge.parent}"
                 for edge in edges if edge.confidence >= floor and edge.confirmed >= cutoff]
        if parts:
            hits.append(f"{token}: {' '.join(parts)}")
            recalled.append(token)
    if not hits and not unknown:
        return "", (), ()
    lines = hits + [ZERO_HIT.format(token=token) for token in unknown]
    return "<recollection>\n" + "\n".join(lines) + "\n</recollection>", tuple(recalled), tuple(unknown)


def inject(messages: list, block: str) -> list:
    """The messages with `block` prepended to the first system message, or as a new system message
    at position 0 when there is none (the seed's injection position)."""
    if not block:
        return messages
    for index, message in enumerate(messages):
        if message.role == "system":
            content = f"{block}\n\n{message.content}" if message.content else block
            return [*messages[:index], replace(message, content=content), *messages[index + 1:]]
    return [Message.system(block), *messages]


class RecollectionMiddleware:
    """Model middleware (fathom.llm.middleware): enriches every call of a workspace whose world exists
    with the recollection of its conversation's words, and learns from them (festinger/learning.py:
    user and assistant content only, each message counted and scanned for cues once per conversation;
    the reply in `after`). The writer's and resolver's own calls are left alone (they are Festinger
    talking to itself)."""

    def before(self, request):
        try:
            world = cache.world(request.workspace_id)
        except RedisError:  # the world model is an enrichment: without Redis the call goes on without it
            log.warning("festinger: Redis is unreachable; model call of workspace %s not enriched",
                        request.workspace_id, exc_info=True)
            return None
        if world is None or request.role in (world.settings.writer_role, world.settings.resolver_role):
            return None
        spoken = conversation_messages(request.messages)
        texts = [m.content for m in spoken]
        key = conversation_key(role=request.role, options=request.options, messages=spoken)
        fresh, marks, learn_later = [], None, _held_learning.get()
        if key is not None:
            try:
                marks = seen_marks_send(workspace_id=world.workspace_id, conversation=key, messages=spoken)
                if marks is not None and learn_later is None:
                    sent, marks = marks, None
                    fresh = sent.unseen()
            except RedisError:
                _unreachable(request.workspace_id)
                key = None
        recollection = recollect(world, texts, [m.content for m in fresh], learn=key is not None and marks is None,
                                 conversation=key, marked=_new_turn(spoken, marks.messages) if marks else ())
        if recollection.block:  # what the trace keeps (in `after`); the conversation named as the loop guard does
            request.metadata["recollection"] = {
                "block": recollection.block[:BLOCK_RECORDED_CHARS], "recalled": list(recollection.recalled),
                "unknown": list(recollection.unknown), "session": conversation_of(request).name}
        request.messages = inject(request.messages, recollection.block)
        request.metadata["festinger"] = {"recalled": list(recollection.recalled),
                                         "unknown": list(recollection.unknown), "cues": len(recollection.cues),
                                         "to_write": list(recollection.to_write), "conversation": key,
                                         "counted": len(fresh)}
        if marks is not None:
            learn_later.append(lambda: _marks_read(request, world, texts, marks))
        return None

    def after(self, request, completion):
        injected = request.metadata.get("recollection")
        if injected is not None:
            event(RECOLLECTION_EVENT, **injected)
        noted = request.metadata.get("festinger")
        if not noted or not noted["conversation"] or not said(completion.text):
            return None
        try:
            world = cache.world(request.workspace_id)
            if world is None or not reply_unseen(workspace_id=world.workspace_id, conversation=noted["conversation"],
                                                 messages=conversation_messages(request.messages),
                                                 reply=Message.assistant(completion.text)):
                return None
        except RedisError:
            return None
        world.count(completion.text)
        triples = cues(completion.text)
        if triples:
            _enqueue(world, Recollection(cues=triples), texts=[completion.text], conversation=noted["conversation"])
        return None


def _new_turn(spoken, marked) -> list[str]:
    """The texts of the marked messages that follow the conversation's last assistant message: those
    the recollection counts in before the marks' answer is read. What came before was sent by earlier calls
    (the reply counted by their `after`), so a conversation new to this process after a restart is not
    rendered as if all its history were new."""
    last = max((index for index, message in enumerate(spoken) if message.role == "assistant"), default=-1)
    turn = {id(message) for message in spoken[last + 1:]}
    return [message.content for message in marked if id(message) in turn]


def _marks_read(request, world: cache.World, texts, marks: SeenMarks) -> None:
    """What the middleware learns from a call once the seen marks it sent on the way in answer."""
    noted = request.metadata["festinger"]
    try:
        fresh = [message.content for message in marks.unseen()]
    except RedisError:
        _unreachable(request.workspace_id)
        noted["conversation"] = None  # as when the marks fail on the way in: the reply is not counted either
        return
    learned = learn_from(world, texts, fresh, conversation=noted["conversation"])
    noted.update(counted=len(fresh), cues=len(learned.cues), to_write=list(learned.to_write))


def _unreachable(workspace_id: int) -> None:
    log.warning("festinger: Redis is unreachable; nothing learned from a model call of workspace %s", workspace_id,
                exc_info=True)


# --- to the memory queue -----------------------------------------------------------------------------

_recent_cues: dict[tuple, float] = {}


def _enqueue(world: cache.World, recollection: Recollection, *, texts, conversation: str | None = None) -> None:
    triples = [triple for triple in recollection.cues if _is_news(world, triple)]
    writes = list(recollection.to_write)
    if writes and not _writes_left(world, conversation):
        writes = []  # a cap is spent (or unknown): the writer would refuse them (festinger.writer)
    if not triples and not writes:
        return
    workspace_id = world.workspace_id
    contexts = {token: _context(token, texts) for token in writes}

    def send():
        if triples:
            signature("memory.festinger_cues_insert").delay(workspace_id, [_as_dict(triple) for triple in triples])
        for token in writes:
            signature("memory.festinger_concept_write").delay(workspace_id, token, contexts[token], conversation)

    waiting = _held_sends.get()
    if waiting is not None:
        waiting.append(send)
    else:
        transaction.on_commit(send)


@contextmanager
def held(sends: list[Callable[[], None]], learn_later: list[Callable[[], None]] | None = None):
    """Meanwhile, what a model call's recollection queues (cues, writes) waits in `sends` for the
    caller to send once its answer is out (the proxy: a publish would delay the response, T33). With
    `learn_later`, the middleware reads no seen marks' answer on the way in either: it renders the
    recollection as if the messages it marks were counted, and leaves in `learn_later` what learns from
    them once the answer is read, for the caller to run after its own work (the proxy: once its upstream
    answered, so that the marks' round trip and the upstream's overlap)."""
    tokens = _held_sends.set(sends), _held_learning.set(learn_later)
    try:
        yield
    finally:
        _held_sends.reset(tokens[0])
        _held_learning.reset(tokens[1])


_held_sends: ContextVar[list | None] = ContextVar("festinger_held_sends", default=None)
_held_learning: ContextVar[list | None] = ContextVar("festinger_held_learning", default=None)


def _writes_left(world: cache.World, conversation: str | None) -> bool:
    settings = world.settings
    try:
        return writer_calls_left(workspace_id=world.workspace_id, conversation=conversation,
                                 per_conversation=settings.writer_calls_per_conversation,
                                 per_hour=settings.writer_calls_per_hour)
    except RedisError:  # on a model call's path: the write waits for a later mention
        log.warning("festinger: Redis is unreachable; writes of workspace %s not queued", world.workspace_id)
        return False


def _is_news(world: cache.World, triple: Triple) -> bool:
    """False for a fact the world holds, confirmed recently, or one sent a moment ago by this process."""
    now = time.time()
    key = (world.workspace_id, triple.concept, triple.parent, triple.dimension, triple.is_isa)
    if _recent_cues.get(key, 0) > now - RECONFIRM_SECONDS:
        return False
    concept_id, dimension_id = world.concept_id(triple.concept), world.concept_id(triple.dimension)
    held = world.urd_by_concept_dim.get((concept_id, dimension_id))
    if (held is not None and held.parent == triple.parent and held.is_isa == triple.is_isa
            and held.confirmed > now - RECONFIRM_SECONDS):
        return False
    if len(_recent_cues) >= _RECENT_CUES_MAX:
        _recent_cues.clear()
    _recent_cues[key] = now
    return True


def _context(token: str, texts, *, limit: int = 3, width: int = 300) -> list[str]:
    """Up to `limit` snippets of the texts around the token, for the writer."""
    snippets = []
    for item in texts:
        merged = normalise(item)
        at = merged.find(token)
        if at >= 0:
            start = max(0, at - width // 2)
            snippets.append(item[start:start + width].strip())
            if len(snippets) >= limit:
                break
    return snippets


def _as_dict(triple: Triple) -> dict:
    return {"concept": triple.concept, "parent": triple.parent, "dimension": triple.dimension,
            "is_isa": triple.is_isa, "confidence": triple.confidence}
