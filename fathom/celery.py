"""The Celery app. Queues are named for their workload; tasks register by explicit names."""

import os

from celery import Celery, signals
from django.conf import settings
from kombu import Exchange, Queue

from fathom import embedded

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")

app = Celery("fathom")
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
