"""The verifiers of an answer's attempt (seed 001's independent verifier), each with a fresh context (the
question, the answer, a summary of its artifacts, and, going beyond the seed, the passages the answer
cites: never the rest of the workspace's data), sent after the attempt's contract is recorded. The lone
standard verifier is called in the fire's own run (.postflight.answer_check); a contrastive group runs
on the quality worker, and its join ticks the fire's session again (fire_parked_resume). Each verdict
is recorded once on the attempt. The sweep sends again, to the quality worker, a verifier a dead
worker or a lost message left unanswered."""

import json
from dataclasses import dataclass
from datetime import timedelta

from celery import chord, group, signature
from django.db import connection, transaction
from django.utils import timezone

from fathom import outbox
from fathom.sql import statement_run
from harness.fires.models import Fire
from harness.quality import agents, subtasks, swarm
from harness.quality.checks import citations_of
from harness.quality.contracts import ArtifactCounts, cleaned_id
from harness.quality.events import fire_resume
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.prompts import prompt_or_default, prompt_override_sql
from harness.quality.selectors import deltas_by_prefix

CONTRASTIVE_WORKFLOWS = ("synthesis", "full_pipeline", "recommendation")


def verification_send(*, run_id, attempt: int, token: str, perspectives, brief: dict) -> None:
    """The verifier group on the quality queue, after commit: a chord of one task per perspective with
    the join as its callback; a lone standard verifier is one task, which joins itself. Each carries
    the verifiers' `brief` (verifier_brief)."""
    if tuple(perspectives) == ("standard",):
        outbox.enqueue("quality.verify", args=[run_id, attempt, token, brief], swept=True)
        return
    header = group(signature("quality.verify_perspective", args=[run_id, attempt, p, token, brief])
                   for p in perspectives)
    callback = signature("quality.verification_join", args=[run_id, attempt, token])
    outbox.enqueue(chord(header, callback), swept=True)


def verifier_brief(fire: Fire, response: dict) -> dict:
    """What the verifiers read, sent with them: their fresh context (the query, the answer as far as
    they read them, a summary of its artifacts, and the passages the answer cites: the first
    agents.PASSAGES cited ids, each with its delta's first agents.PASSAGE_CHARS characters, or a note
    that no such delta is in this workspace; nothing else of the workspace's data), and where the fire
    is, to carry it on. Its text is bounded by agents.BRIEF_CHARS (one query, for the passages)."""
    counts = ArtifactCounts.from_kinds(card.get("kind", "") for card in response.get("cards") or [])
    cited = list(dict.fromkeys(citation.delta_id for citation in citations_of(response)))[:agents.PASSAGES]
    return {"workspace_id": fire.workspace_id, "session_id": str(fire.session_id), "fire_id": str(fire.pk),
            "query": fire.question[:agents.QUERY_CHARS], "output": response.get("body", "")[:agents.OUTPUT_CHARS],
            "artifacts": counts.summary(),
            "passages": _cited_passages(workspace_id=fire.workspace_id, cited=cited)}


def _cited_passages(*, workspace_id, cited: list[str]) -> list[dict]:
    """{id, passage} for each cited id, in order, in one query: the first agents.PASSAGE_CHARS characters of the
    one delta of the workspace it names (a full id or a unique prefix), or a note of why there is none,
    in the words of the citation check."""
    wanted = {value: cleaned_id(value) for value in cited}
    contents = deltas_by_prefix(workspace=workspace_id, prefixes=sorted({p for p in wanted.values() if p}))
    passages = []
    for value, prefix in wanted.items():
        matches = [delta_id for delta_id in contents if prefix and delta_id.startswith(prefix)]
        if len(matches) == 1:
            passages.append({"id": matches[0], "passage": contents[matches[0]][0][:agents.PASSAGE_CHARS]})
        else:
            passages.append({"id": value, "passage": f"{agents.NO_PASSAGE} in this workspace)" if not matches
                             else "(the prefix matches more than one delta)"})
    return passages


def verified_in_fire(run: QualityRun) -> bool:
    """Whether the run's verifier is the lone standard one, which the fire's own run calls."""
    return perspectives_for(run) == ("standard",)


def perspectives_for(run: QualityRun) -> tuple[str, ...]:
    contrastive = (run.complexity.get("level") == "COMPLEX"
                   and run.complexity.get("workflow_type") in CONTRASTIVE_WORKFLOWS)
    return agents.PERSPECTIVES if contrastive else ("standard",)


def verification_run(*, run_id, attempt: int, perspective: str, brief: dict) -> dict:
    """One verifier of an attempt (a task of the group): its verdict, recorded once (a redelivered task
    finds it and makes no second call)."""
    context = _verifier_context(run_id=run_id, attempt=attempt, perspective=perspective, brief=brief)
    if context.recorded is not None:
        return context.recorded
    verdict = _verdict(perspective, brief, context)
    with connection.cursor() as cursor:  # one statement: the group's tasks write the same row at once
        cursor.execute("UPDATE harness_qualityattempt SET perspectives = perspectives || %s::jsonb "
                       "WHERE run_id = %s AND number = %s", [_json({perspective: verdict}), run_id, attempt])
    return verdict


def verification_join(*, run_id, attempt: int, token: str) -> bool:
    """The contrastive chord's callback: combine the verdicts into the attempt's and tick the fire's
    session again. False (nothing done) when the run no longer waits for this chord or a verdict is
    missing."""
    row = QualityAttempt.objects.select_related("run__fire").get(run_id=run_id, number=attempt)
    if any(p not in row.perspectives for p in perspectives_for(row.run)):
        return False
    verdict = agents.contrastive_combine(row.perspectives)
    fire = row.run.fire
    return _verdict_record(run_id=run_id, attempt=attempt, token=token, verdict=verdict, session_id=fire.session_id,
                           workspace_id=fire.workspace_id, fire_id=fire.pk)


def verification_alone(*, run_id, attempt: int, token: str, brief: dict, resume: bool = True) -> dict | None:
    """The lone standard verifier of an attempt (no contrastive group): its verdict, recorded as the
    attempt's and returned; with `resume` (the quality worker's task), the fire's session ticked again.
    None (nothing done, no call made) when the run no longer waits for the verifier sent with `token`."""
    context = _verifier_context(run_id=run_id, attempt=attempt, perspective="standard", brief=brief, token=token)
    if not context.waiting:
        return None
    verdict = _verdict("standard", brief, context)
    recorded = _verdict_record(run_id=run_id, attempt=attempt, token=token, verdict=verdict, perspective="standard",
                               session_id=brief["session_id"], workspace_id=brief["workspace_id"],
                               fire_id=brief["fire_id"], resume=resume)
    return verdict if recorded else None


@dataclass
class _VerifierContext:
    calibration: str
    prompt: str
    waiting: bool  # the run waits for the verifiers sent with the token
    recorded: dict | None  # the perspective's verdict, when recorded already


def _verifier_context(*, run_id, attempt: int, perspective: str, brief: dict, token: str = "") -> _VerifierContext:
    """What a verifier task reads besides its brief, in one query: the workspace's calibration, the
    perspective's prompt (the admin's override or the default), whether the run still waits for it,
    and its verdict if recorded already."""
    prompt_id = agents.verifier_prompt_id(perspective)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.calibration, {prompt_override_sql()}, "
            "EXISTS (SELECT 1 FROM harness_qualityrun WHERE id = %s AND waiting_for = 'verifier' AND waiting_token = %s), "
            "(SELECT perspectives -> %s FROM harness_qualityattempt WHERE run_id = %s AND number = %s) "
            "FROM (SELECT 1) AS one LEFT JOIN harness_qualitysettings s ON s.workspace_id = %s",
            [prompt_id, run_id, token, perspective, run_id, attempt, brief["workspace_id"]])
        calibration, override, waiting, recorded = cursor.fetchone()
    return _VerifierContext(calibration=calibration or "", prompt=prompt_or_default(prompt_id, override),
                            waiting=waiting, recorded=_json_of(recorded))


def _verdict(perspective: str, brief: dict, context: _VerifierContext) -> dict:
    """The verifier `perspective`'s verdict of the answer in `brief`: one model call, fresh context."""
    return agents.verify(workspace=brief["workspace_id"], perspective=perspective, query=brief["query"],
                         output=brief["output"], artifact_summary=brief["artifacts"],
                         passages=brief.get("passages") or [], system=context.prompt,
                         calibration=context.calibration if perspective == "standard" else "")


def _verdict_record(*, run_id, attempt: int, token: str, verdict: dict, perspective: str = "", session_id,
                    workspace_id, fire_id, resume: bool = True) -> bool:
    """The attempt's verdict (and the lone verifier's perspective), recorded if its run still waits for
    the verifiers sent with `token`, in one statement (its conditional UPDATE takes the run's row: of two
    joins at once, a resent chord's, one records it); with `resume`, the fire's session ticked again
    after commit.

    Outside a transaction its commit does not wait for the WAL flush (as a trace's or a claim's): the
    verdict is the answer of a call that can be made again, and the resumed fire's next commit flushes
    it. A crash of the database before that leaves the run waiting, and the sweep sends its verifier
    again (runs_waiting_resend): one more call, never a wrong or a lost answer."""
    with connection.cursor() as cursor:
        statement_run(
            cursor,
            "WITH waited AS (UPDATE harness_qualityrun SET waiting_for = '', waiting_token = '', "
            "waiting_since = NULL WHERE id = %s AND waiting_for = 'verifier' AND waiting_token = %s RETURNING id) "
            "UPDATE harness_qualityattempt SET verifier = %s::jsonb, perspectives = perspectives || %s::jsonb "
            "WHERE run_id = %s AND number = %s AND EXISTS (SELECT 1 FROM waited) RETURNING id",
            [run_id, token, _json(verdict), _json({perspective: verdict} if perspective else {}), run_id, attempt],
            durable=False)
        if cursor.fetchone() is None:
            return False
    if resume:
        fire_resume(session_id=session_id, workspace_id=workspace_id, fire_id=fire_id)
    return True


def runs_waiting_resend(*, older_than_seconds: float) -> list:
    """Send again the chord of every run waiting longer than this (a worker died under it, the broker
    lost it): its tasks that already answered return what they recorded. Run by the sweep."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    resent = []
    for run in QualityRun.objects.filter(waiting_for__in=["verifier", "swarm", "subtasks"],
                                         waiting_since__lt=cutoff).select_related("fire"):
        with transaction.atomic():
            QualityRun.objects.filter(pk=run.pk, waiting_token=run.waiting_token).update(waiting_since=timezone.now())
            if run.waiting_for == "swarm":
                swarm.send(run_id=run.pk, specialists=run.swarm.get("specialists", []), token=run.waiting_token)
            elif run.waiting_for == "subtasks":
                subtasks.send(run_id=run.pk, steps=subtasks.next_layer(run), token=run.waiting_token)
            else:
                verification_send(run_id=run.pk, attempt=run.attempt, token=run.waiting_token,
                                  perspectives=perspectives_for(run),
                                  brief=verifier_brief(run.fire, run.attempts.get(number=run.attempt).response))
        resent.append(run.pk)
    return resent


def _json(value) -> str:
    return json.dumps(value, default=str)


def _json_of(value):
    return json.loads(value) if isinstance(value, str) else value
