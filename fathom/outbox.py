"""The transactional outbox: every task a state change must be followed by (a session's tick, a parked
fire's verifier group, a fire's per-fire writes, an embedding batch) is sent through `enqueue`, the one
way to send a task in this project.

`enqueue` records the send as an OutboxMessage row in the caller's transaction, so it exists exactly
when the state change does, and publishes it once that transaction commits; a published message's row
is deleted. A send the broker refused (Redis down, restarting) keeps its row, and the relay
(`maintenance.outbox_relay`, a beat entry every fathom.schedules.OUTBOX_RELAY_SECONDS) publishes the rows left behind until the
broker takes them: a send outlives the broker, and is made within seconds of its return.

A task whose retry could not be published (Celery would reject its message for good, `reject
requeue=False`) records that retry here instead (`Task`, the base of every task), so no task is dropped
because the broker was away when it failed.

Delivery is at least once: a row whose publish succeeded but whose delete did not (the database went
away in between), or a send slower than RELAY_GRACE_SECONDS, may be published twice. Every task of the
project is idempotent for that reason (docs/architecture.md)."""

import logging
from datetime import timedelta

from celery import Task as CeleryTask
from celery import signature
from celery.canvas import Signature
from celery.exceptions import Ignore, Reject
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

from fathom.celery import app
from fathom.sql import statement_run
from fathom.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)

RELAY_GRACE_SECONDS = 5  # a row younger than this is still being sent by its own transaction's commit
RELAY_BATCH = 500


class OutboxMessage(models.Model):
    """A task to publish: recorded with the state change it follows, deleted once the broker took it."""

    message = models.JSONField(encoder=DjangoJSONEncoder, help_text="the Celery signature (a chord too), as a dict")
    due_at = models.DateTimeField(help_text="not to run before (a countdown)")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    attempts = models.PositiveIntegerField(default=0, help_text="publishes the broker refused")
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.message.get('task', 'canvas')} due {self.due_at:%H:%M:%S}"


def enqueue(task: str | Signature, *, args=(), kwargs=None, countdown: float | None = None, swept: bool = False,
            **options) -> None:
    """Send `task` (a registered task's name, or a Celery signature: a chord too) once the current
    transaction commits (at once outside one): recorded in that transaction, so nothing is sent for a
    write rolled back and nothing is lost if the broker refuses it (the relay sends it later). By name,
    as beat does, so a service never imports the tasks module that calls it; `options` are
    apply_async's (queue, time limits); `countdown` delays the run.

    `swept`: a send that a sweep makes again when it is lost (a parked fire's verifiers: the quality
    resend sweep; a parked fire's way back: the sessions sweep). It is recorded only if the broker
    refuses it at commit, which spares a hot path the row's insert and delete: a process dying between
    the commit and the publish loses it, and its sweep sends it again."""
    message = dict(task if isinstance(task, Signature) else app.signature(task, args=list(args), kwargs=kwargs or {},
                                                                          **options))
    due_at = timezone.now() + timedelta(seconds=countdown or 0)
    if swept:
        transaction.on_commit(lambda: _publish_or_record(message, due_at))
        return
    row = OutboxMessage.objects.create(message=message, due_at=due_at)
    transaction.on_commit(lambda: _publish(row))


def relay(*, grace_seconds: float = RELAY_GRACE_SECONDS) -> int:
    """Publish the rows older than `grace_seconds` (their commit's own send failed, or their process
    died before it), oldest first, until the broker refuses one; how many were published. Rows another
    relay is publishing are skipped."""
    sent = []
    with transaction.atomic():
        pending = (OutboxMessage.objects.select_for_update(skip_locked=True)
                   .filter(created_at__lt=timezone.now() - timedelta(seconds=grace_seconds))[:RELAY_BATCH])
        for row in pending:
            try:
                _send(row.message, row.due_at)
            except TRANSIENT_ERRORS as exc:  # the broker is still away: the next relay tries again
                OutboxMessage.objects.filter(pk=row.pk).update(attempts=row.attempts + 1, last_error=repr(exc)[:2000])
                break
            sent.append(row.pk)
        OutboxMessage.objects.filter(pk__in=sent).delete()
    return len(sent)


class Task(CeleryTask):
    """The base of every task (fathom.celery): a retry the broker refused to take is kept in the outbox
    and sent by the relay, instead of the message being rejected for good."""

    def retry(self, args=None, kwargs=None, exc=None, throw=True, eta=None, countdown=None, max_retries=None,
              **options):
        try:
            return super().retry(args=args, kwargs=kwargs, exc=exc, throw=throw, eta=eta, countdown=countdown,
                                 max_retries=max_retries, **options)
        except Reject as rejected:
            if rejected.requeue or not isinstance(rejected.reason, TRANSIENT_ERRORS):
                raise
            again = self.signature_from_request(self.request, args, kwargs, retries=self.request.retries + 1,
                                                **options)
            try:
                enqueue(again, countdown=countdown)
            except TRANSIENT_ERRORS:  # the database is away too: nowhere to keep it
                raise rejected from None
            logger.warning("%s[%s]: the broker refused its retry; kept in the outbox", self.name, self.request.id)
            raise Ignore() from rejected


def _publish(row: OutboxMessage) -> None:
    try:
        _send(row.message, row.due_at)
    except TRANSIENT_ERRORS:
        logger.warning("outbox message %s not published now; the relay sends it", row.pk, exc_info=True)
        return
    try:
        _delete(row.pk)
    except TRANSIENT_ERRORS:  # published, but still recorded: the relay may publish it once more
        logger.warning("outbox message %s published but not deleted", row.pk, exc_info=True)


def _publish_or_record(message: dict, due_at) -> None:
    try:
        _send(message, due_at)
    except TRANSIENT_ERRORS:
        try:
            row = OutboxMessage.objects.create(message=message, due_at=due_at)
        except TRANSIENT_ERRORS:  # the database is away too: its sweep sends it again
            logger.warning("%s not published nor recorded; its sweep sends it again", message.get("task", "canvas"),
                           exc_info=True)
            return
        logger.warning("outbox message %s not published now; the relay sends it", row.pk, exc_info=True)


def _delete(pk) -> None:
    # One statement (the ORM's delete is three: BEGIN, DELETE, COMMIT), whose commit outside a
    # transaction does not wait for the WAL flush, as a claim's: a delete a crash forgets only
    # publishes the message once more.
    table = connection.ops.quote_name(OutboxMessage._meta.db_table)
    with connection.cursor() as cursor:
        statement_run(cursor, f"DELETE FROM {table} WHERE id = %s", [pk], durable=False)


def _send(message: dict, due_at) -> None:
    remaining = (due_at - timezone.now()).total_seconds()
    try:
        signature(message, app=app).apply_async(countdown=remaining if remaining > 0 else None)
    except RuntimeError as exc:
        # A group (a chord's header) subscribes to its tasks' results as it sends them, and Celery's
        # Redis result store wraps the connection error it meets there in a RuntimeError
        # (celery.backends.asynchronous.reconnect_on_error): Redis is away, as for a refused publish.
        if isinstance(exc.__cause__, TRANSIENT_ERRORS):
            raise exc.__cause__ from exc
        raise
