"""How the dashboard says what Festinger did: a loop detector's event in a few words, a recollection
with where it went (a fire's turns, a proxied conversation), a conflict with the decisions its override
may take, and the conversations Festinger saw. Read by the Festinger panels and card section
(`sections`), the conversation page (`views`) and the Festinger page (`pages`)."""

import json

from festinger.loops.models import DETECTIONS, MITIGATIONS, LoopEvent
from festinger.loops.selectors import loop_conversations
from festinger.resolution import allowed_decisions
from festinger.selectors import recollection_conversations

Kind = LoopEvent.Kind


def loop_event_row(event: LoopEvent) -> dict:
    """A LoopEvent for a table: its kind in words, whether it detected or mitigated, its detail in words."""
    return {"event": event, "label": event.get_kind_display(), "summary": _summary(event.kind, event.detail or {}),
            "role": "detection" if event.kind in DETECTIONS else "mitigation" if event.kind in MITIGATIONS else "state"}


def recollection_entry(row) -> dict:
    """A `festinger.recollection` trace event: its block, what it recalled and did not know, who was
    prompted (`source`, in words) and where it went (`fire_id` for a fire's model call, else the
    conversation, e.g. a proxied client's session)."""
    payload = row.payload or {}
    return {"at": row.at, "block": payload.get("block", ""), "recalled": payload.get("recalled") or [],
            "unknown": payload.get("unknown") or [], "session": payload.get("session") or "",
            "source": _prompted(row.actor_id or ""),
            "fire_id": row.run_id if row.run_id and row.actor_id == f"fire:{row.run_id}" else None}


def recollections_folded(rows) -> list[dict]:
    """The entries of these recollection events, newest first, the same block given to the same source
    in a row shown once with how many times (`times`)."""
    entries: list[dict] = []
    for row in rows:
        entry = recollection_entry(row)
        last = entries[-1] if entries else None
        if last and (last["block"], last["source"], last["session"]) == (entry["block"], entry["source"],
                                                                          entry["session"]):
            last["times"] += 1
            continue
        entries.append({**entry, "times": 1})
    return entries


def _prompted(actor_id: str) -> str:
    kind, _, rest = actor_id.partition(":")
    if kind == "fire":
        return "a fire's prompt"
    if kind == "producer":
        return f"the {rest.partition(':')[0]} producer's prompt"
    if kind == "conductor":
        return "a conductor run's prompt"
    if kind == "autonomy":
        return "a Sit's prompt"
    if actor_id == "festinger:proxy":
        return "a proxied prompt"
    return f"{actor_id}'s prompt" if actor_id else "a prompt"


def recollections_by_turn(fire, rows) -> dict:
    """A fire's recollections in order as `groups`, the same block given to turns in a row shown once with
    their numbers (a call that is no turn of the fire's journal has none), and every concept they
    `recalled` and left `unknown`."""
    turn_of = {turn.call_id: turn.number for turn in fire.turns.all() if turn.call_id}
    groups: list[dict] = []
    for row in rows:
        entry = recollection_entry(row)
        turn = turn_of.get(row.call_id)
        if groups and groups[-1]["block"] == entry["block"]:
            groups[-1]["turns"].append(turn)
            continue
        groups.append({**entry, "turns": [turn]})
    for group in groups:
        group["turns"] = [number for number in group["turns"] if number is not None]
    return {"groups": groups,
            "recalled": list(dict.fromkeys(token for group in groups for token in group["recalled"])),
            "unknown": list(dict.fromkeys(token for group in groups for token in group["unknown"]))}


def conflict_items(conflicts) -> list[dict]:
    """Pending conflicts for the override form: each with the decisions its collision type allows."""
    return [{"conflict": conflict, "decisions": allowed_decisions(conflict.collision_type)} for conflict in conflicts]


def conversations_seen(*, workspace, limit: int) -> list[dict]:
    """The conversations Festinger saw, the latest first: those the loop detector acted in and those whose
    prompts received recollections, each once as {session, last_at, recollections, from_fires, detections,
    mitigations, state} (`state`: its loop state now, None when unknown). Two queries and a Redis read."""
    seen: dict[str, dict] = {}
    for row in recollection_conversations(workspace=workspace, limit=limit):
        seen[row["session"]] = {**row, "detections": 0, "mitigations": 0, "state": None}
    for row in loop_conversations(workspace=workspace, since=None, limit=limit):
        found = seen.setdefault(row["session"], {"session": row["session"], "last_at": row["last_at"],
                                                 "recollections": 0, "from_fires": 0})
        found.update(detections=row["detections"], mitigations=row["mitigations"], state=row["state"],
                     last_at=max(found["last_at"], row["last_at"]))
    return sorted(seen.values(), key=lambda row: row["last_at"], reverse=True)[:limit]


def _summary(kind: str, detail: dict) -> str:
    if kind == Kind.REPEATED_OUTPUT:
        return f"“{detail.get('output', '')}” {detail.get('times', '?')} times"
    if kind == Kind.TOOL_CYCLE:
        calls = ", ".join(f"{call.get('name')}({json.dumps(call.get('arguments'), sort_keys=True)[:80]})"
                          for call in detail.get("calls") or [])
        return f"{calls}, a cycle of {detail.get('period', '?')}"
    if kind == Kind.STREAM_REPETITION:
        return f"“{detail.get('repeated', '')}” {detail.get('times', '?')} times in one answer"
    if kind == Kind.TEMPERATURE_BOOST:
        return f"temperature {detail.get('from')} → {detail.get('to')}"
    if kind == Kind.FORBID_ACTION:
        return detail.get("note", "")
    if kind == Kind.TRUNCATE_HISTORY:
        return f"{detail.get('dropped', '?')} messages dropped"
    if kind == Kind.BREAKER_OPENED:
        return f"open for {detail.get('cooldown_seconds', '?')} s"
    if kind == Kind.BREAKER_ANSWERED:
        return f"{detail.get('seconds_left', '?')} s of its cool-down left"
    if kind == Kind.BREAKER_CLOSED and "answered" in detail:
        return f"it answered {detail['answered']} calls while open"
    return ""
