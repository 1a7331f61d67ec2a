"""Every Celery task retries the transient errors (one list, fathom.transient), with a bounded
exponential backoff and jitter, and none retries every exception, nor a model call refused by the
trace's budget."""

from fathom.celery import app
from fathom.llm.errors import LLMBudgetExceeded
from fathom.transient import TRANSIENT_ERRORS


def project_tasks():
    app.loader.import_default_modules()
    return {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_every_task_retries_transient_errors_with_bounded_backoff_and_jitter():
    tasks = project_tasks()
    assert {"quality.fire_judge_axes", "fires.session_tick", "fires.fire_run", "memory.embed_deltas"} <= set(tasks)
    for name, task in tasks.items():
        retried = tuple(getattr(task, "autoretry_for", ()))
        assert set(TRANSIENT_ERRORS) <= set(retried), f"{name} does not retry the transient errors"
        assert Exception not in retried and BaseException not in retried, f"{name} retries every error"
        assert not issubclass(LLMBudgetExceeded, retried), f"{name} retries a call its trace may not make"
        assert task.retry_backoff and task.retry_jitter, f"{name} retries without backoff and jitter"
        assert 0 < task.max_retries <= 10 and task.retry_backoff_max <= 300, f"{name} retries without bound"
