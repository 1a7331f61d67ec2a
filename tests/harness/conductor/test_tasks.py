"""Where the conductor's tasks run: a step on the prefork worker (`fires`), each capability call on the
queue that `fathom up`'s thread-pool worker serves (`quality`), so a step's ready items run at once.
The messages are really published to the broker (Redis); the step runs here, as its Celery task."""

import pytest
from celery.signals import before_task_publish

from fathom.celery import app
from fathom.supervisor import stack_children
from harness.conductor.tasks import conductor_step

pytestmark = pytest.mark.django_db


def test_a_steps_capability_calls_go_to_the_queue_of_fathom_ups_thread_pool_worker(
        api, conductor_script, django_capture_on_commit_callbacks, settings):
    # given a run posted over REST whose bootstrap sets two ready items
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "chips"},
                                                        {"capability": "researcher", "task": "batteries"}]})
    # (this test's transaction never commits, so the run's first step is not published: it runs below)
    run_id = api.post("/v1/runs", {"objective": "whats tech news today"}, format="json").json()["id"]
    published = []

    def record(sender=None, routing_key=None, **_kwargs):
        published.append((sender, routing_key))

    # when that step runs as its Celery task and its dispatches are published after commit
    before_task_publish.connect(record)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            conductor_step.apply(args=[run_id])
    finally:
        before_task_publish.disconnect(record)
        app.control.purge()  # no worker is to run calls whose rows this test never commits

    # then each call went to the quality queue, which fathom up's thread-pool worker alone consumes
    assert published == [("quality.conductor_call", "quality")] * 2
    children = {child.name: child.argv for child in stack_children(host="127.0.0.1", port=8000)}
    threads, prefork = children["quality"], children["worker"]
    assert threads[threads.index("-Q") + 1].split(",") == ["quality"] and threads[threads.index("-P") + 1] == "threads"
    assert int(threads[threads.index("-c") + 1]) == settings.FATHOM_QUALITY_WORKER_THREADS >= 10
    assert "quality" not in prefork[prefork.index("-Q") + 1].split(",")
