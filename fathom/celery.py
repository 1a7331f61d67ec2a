"""The Celery app. Queues are named for their workload; tasks register by explicit names, and code
sends them by those names through the transactional outbox (fathom.outbox.enqueue), whose Task is the
base of every task."""

import os

from celery import Celery, signals
from django.conf import settings
from django.db import close_old_connections
from kombu import Exchange, Queue

from fathom import embedded

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")

app = Celery("fathom", task_cls="fathom.outbox:Task")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in ("fires", "quality", "memory", "maintenance")
]
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def _start_embedded_services(**_kwargs):
    embedded.ensure_started(
        settings.DATA_DIR, postgres=settings.EMBEDDED_POSTGRES, redis=settings.EMBEDDED_REDIS
    )


@signals.task_prerun.connect
@signals.task_postrun.connect
def _give_database_connections_back(sender=None, **_kwargs):
    """Before and after every task, the thread running it gives its database connection back to its
    process's pool (CONN_MAX_AGE is 0), so a worker thread holds none between tasks. Celery's own Django
    fixup would close the whole pool of a prefork child at each task instead (celery#10554; a pool
    start costs more than the task's connection), so settings turn that off with CELERY_DB_REUSE_MAX."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return  # an eager task runs inside its caller's transaction
    close_old_connections()
