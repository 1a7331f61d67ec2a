"""The write path (seed 002, "Writing — cloud-triggered, async"): a concept whose saliency crossed the
write threshold is explained by the workspace's `writer` role, with the dimension taxonomy as a closed
list, as structured triples; the valid ones are placed through `insert_fact` (the collision check:
a collision becomes a Conflict, never an error) and the concept's novelty becomes 1.0.

Runs in the `memory.festinger_concept_write` task, never on a model call's path. One write per
concept at a time (a Redis lock); at most `writer_max_calls` model calls per write (a malformed
answer is sent back once with what was wrong), all counted in the result and the trace. Every model
call is taken from the workspace's hourly cap and the conversation's cap first
(festinger.learning.writer_call_allow); with either spent the write ends `capped`."""

from __future__ import annotations

import json

from django.db.models import F
from redis.exceptions import LockNotOwnedError

from fathom.llm import LLMError, Message, complete
from fathom.models import Workspace
from fathom.redis_client import get_redis
from fathom.tracing.spans import span
from festinger.learning import writer_call_allow
from festinger.models import Concept, Conflict, Edge
from festinger.services import concepts_ensure, insert_fact, world_ensure
from festinger.text import canonical

MAX_TRIPLES = 8
LOCK_SECONDS = 900  # longer than the task's hard time limit
ACTOR = "festinger.writer"
_LOCK = "festinger:{ws}:writing:{token}"

SYSTEM = (
    "You maintain a world model of concepts. Each fact places a concept IN a parent concept within one "
    "dimension. is_isa is true for a kind or type (\"X is a Y\"), false for membership, hosting, ownership "
    "or location (\"X is part of Y\"). Use only the dimensions listed. Give only facts you are confident "
    "of, each with a confidence between 0 and 1, and answer with JSON only."
)


def concept_write(*, workspace_id: int, token: str, context=(), conversation: str | None = None) -> dict:
    """Ask the writer what `token` is and place its answer. Returns what happened: status `written`,
    `known` (novelty already set), `in_flight` (another write holds the concept), `unusable` (no valid
    triple within the call cap), `capped` (the conversation's or the workspace's hourly writer calls
    are spent) or `failed` (the model call failed), with `model_calls`, `placed` and `rejected`."""
    token = canonical(token)
    lock = get_redis().lock(_LOCK.format(ws=workspace_id, token=token), timeout=LOCK_SECONDS)
    if not token or not lock.acquire(blocking=False):
        return {"status": "in_flight", "token": token, "model_calls": 0, "placed": [], "rejected": []}
    try:
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            return {"status": "failed", "token": token, "model_calls": 0, "placed": [], "rejected": [],
                    "error": "no such workspace"}
        with span("festinger.write", workspace=workspace_id, actor_id=ACTOR, token=token) as traced:
            result = _write(workspace, token, list(context), conversation)
            traced.set(status=result["status"], model_calls=result["model_calls"], placed=len(result["placed"]),
                       rejected=len(result["rejected"]))
        return result
    finally:
        try:
            lock.release()
        except LockNotOwnedError:
            pass  # it expired (past the task's hard limit) and may be another write's now: not ours to free


def _write(workspace, token: str, context: list[str], conversation: str | None) -> dict:
    config = world_ensure(workspace=workspace)
    result = {"status": "unusable", "token": token, "model_calls": 0, "placed": [], "rejected": []}
    if Concept.objects.filter(workspace=workspace, token=token, novelty__gt=0).exists():
        result["status"] = "known"
        return result
    dimensions = sorted(Edge.objects.filter(workspace=workspace, parent_id=F("concept_id"),
                                            dimension_id=F("concept_id"))
                        .values_list("dimension__token", flat=True))
    messages = [Message.system(SYSTEM), Message.user(_question(token, dimensions, context))]
    triples: list[dict] = []
    while result["model_calls"] < max(1, config.writer_max_calls):
        if not writer_call_allow(workspace_id=workspace.pk, conversation=conversation,
                                 per_conversation=config.writer_calls_per_conversation,
                                 per_hour=config.writer_calls_per_hour):
            result["status"] = "capped"
            break
        result["model_calls"] += 1
        try:
            completion = complete(workspace=workspace, role=config.writer_role, messages=messages,
                                  response_format=schema(dimensions), actor_id=ACTOR)
        except LLMError as exc:
            result.update(status="failed", error=exc.message)
            return result
        triples, problems = validate(completion.text, token=token, dimensions=dimensions)
        result["rejected"] = problems
        if triples or not problems:
            break
        messages += [Message.assistant(completion.text),
                     Message.user("That answer could not be used: " + "; ".join(problems[:5])
                                  + ". Answer again with the JSON object only.")]
    for triple in triples:
        placed = insert_fact(workspace=workspace, concept=triple["concept"], parent=triple["parent"],
                             dimension=triple["dimension"], is_isa=triple["is_isa"],
                             confidence=triple["confidence"], source="cloud_llm")
        result["placed"].append({**triple, "outcome": "conflict" if isinstance(placed, Conflict) else "edge",
                                 "id": placed.pk})
    if triples:
        concepts_ensure(workspace=workspace, tokens=[token])
        Concept.objects.filter(workspace=workspace, token=token).update(novelty=1.0)
        result["status"] = "written"
    return result


def _question(token: str, dimensions: list[str], context: list[str]) -> str:
    lines = [f"What is `{token}`?", "",
             "Dimensions (closed list; use these names exactly): " + ", ".join(dimensions), "",
             f"Answer with {{\"triples\": [...]}}: up to {MAX_TRIPLES} facts about `{token}`, each "
             "{\"concept\", \"parent\", \"dimension\", \"is_isa\", \"confidence\"}, concept being "
             f"`{token}`. An empty list if you do not know it."]
    if context:
        lines += ["", "Where it was seen:", *(f"- {snippet}" for snippet in context)]
    return "\n".join(lines)


def schema(dimensions: list[str]) -> dict:
    """The JSON schema the writer answers in: the dimensions are an enum (the closed list)."""
    triple = {"type": "object", "additionalProperties": False,
              "required": ["concept", "parent", "dimension", "is_isa", "confidence"],
              "properties": {"concept": {"type": "string"}, "parent": {"type": "string"},
                             "dimension": {"type": "string", "enum": list(dimensions)},
                             "is_isa": {"type": "boolean"},
                             "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
    return {"type": "json_schema", "json_schema": {"name": "festinger_triples", "strict": True, "schema": {
        "type": "object", "additionalProperties": False, "required": ["triples"],
        "properties": {"triples": {"type": "array", "maxItems": MAX_TRIPLES, "items": triple}}}}}


def validate(text: str, *, token: str, dimensions: list[str]) -> tuple[list[dict], list[str]]:
    """The usable triples of a writer's answer, and what was wrong with the rest. A triple must be
    about `token`, name a parent that is one token, use a listed dimension, and carry a boolean
    is_isa and a confidence in [0, 1]."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return [], ["the answer is not JSON"]
    items = data.get("triples") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], ["the answer has no \"triples\" list"]
    allowed = set(dimensions)
    usable, problems, seen = [], [], set()
    for index, item in enumerate(items[:MAX_TRIPLES]):
        where = f"triple {index + 1}"
        if not isinstance(item, dict):
            problems.append(f"{where} is not an object")
            continue
        concept = canonical(str(item.get("concept", "")))
        parent = canonical(str(item.get("parent", "")))
        dimension = canonical(str(item.get("dimension", "")))
        is_isa, confidence = item.get("is_isa"), item.get("confidence")
        if concept != token:
            problems.append(f"{where} is about {concept or 'nothing'!r}, not {token!r}")
        elif not parent or parent == token:
            problems.append(f"{where} has no usable parent")
        elif dimension not in allowed:
            problems.append(f"{where} uses dimension {dimension!r}, not one of the list")
        elif not isinstance(is_isa, bool):
            problems.append(f"{where}: is_isa must be true or false")
        elif isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
            problems.append(f"{where}: confidence must be a number from 0 to 1")
        elif (dimension, parent) in seen:
            problems.append(f"{where} repeats an earlier one")
        else:
            seen.add((dimension, parent))
            usable.append({"concept": token, "parent": parent, "dimension": dimension, "is_isa": is_isa,
                           "confidence": float(confidence)})
    if len(items) > MAX_TRIPLES:
        problems.append(f"only the first {MAX_TRIPLES} triples were read")
    return usable, problems
