"""The resolution job (seed 002: nightly resolution job, Test C, T27-T30) through its services with the
scripted resolver model."""

import json

import pytest
from django.db import OperationalError

from fathom.llm.scripted import Script
from fathom.redis_client import get_redis
from festinger.models import Concept, Conflict, ConflictStatus, Edge, EdgeHistory, ResolutionRun
from festinger.resolution import conflict_apply, resolution_execute
from festinger.services import insert_fact
from festinger.tasks import resolution_request
from tests.festinger.conftest import isa_isa_conflict

DECOMPOSE = {"decision": "decompose", "existing_dimension": "artifact-type", "new_dimension": "deployment-type",
             "reasoning": "repo describes what gnommoweb is as a software artifact; container describes how it "
                          "is deployed"}


def edges_of(workspace, token):
    return sorted((e.parent.token, e.dimension.token) for e in Edge.objects.filter(
        workspace=workspace, concept__token=token).select_related("parent", "dimension"))


def run_now(workspace, **kwargs):
    run = resolution_request(workspace=workspace, trigger="test")
    return resolution_execute(run_id=run.pk, **kwargs)


@pytest.fixture
def test_b_state(workspace):
    """The state at the end of seed Test B: gnommoweb ISA repo in type, and the queued ISA+ISA collision."""
    return isa_isa_conflict(workspace)


def test_test_c_the_job_decomposes_an_isa_isa_collision_into_two_dimensions(workspace, scripted_llm, test_b_state):
    scripted_llm.reply(json.dumps(DECOMPOSE))

    run = run_now(workspace)

    assert (run.status, run.processed, run.resolved, run.failed) == ("finished", 1, 1, 0)
    sent = scripted_llm.sent[0]
    assert sent.role == "resolver" and sent.response_format["type"] == "json_schema"
    assert "gnommoweb ISA repo" in sent.last_user_text and "gnommoweb ISA container" in sent.last_user_text
    assert "isa_isa" in sent.last_user_text
    # both facts placed in the new dimensions, none left in type
    assert edges_of(workspace, "gnommoweb") == [("container", "deployment-type"), ("repo", "artifact-type")]
    for token in ("artifact-type", "deployment-type"):
        root = Edge.objects.get(workspace=workspace, concept__token=token)
        assert root.is_root
    moved = Edge.objects.get(workspace=workspace, concept__token="gnommoweb", parent__token="repo")
    assert (moved.source, moved.confidence) == ("cloud_llm", 0.9)  # the existing fact, moved as it was
    placed = Edge.objects.get(workspace=workspace, concept__token="gnommoweb", parent__token="container")
    assert (placed.source, placed.is_isa) == ("festinger", True)
    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert conflict.status == ConflictStatus.RESOLVED and conflict.resolved_at is not None
    assert conflict.resolution["decision"] == DECOMPOSE and conflict.resolution["by"] == "festinger"
    assert conflict.resolution["applied"]["dimensions"] == ["artifact-type", "deployment-type"]
    history = EdgeHistory.objects.get(workspace=workspace)
    assert (history.action, history.dimension.token, history.moved_to.token, history.parent.token) == (
        "moved", "type", "artifact-type", "repo")
    assert history.conflict_id == conflict.pk
    assert not Conflict.objects.filter(workspace=workspace, status="pending").exists()


def test_update_retires_the_old_edge_to_history_and_inserts_the_new_one(workspace, scripted_llm):
    old = insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                      is_isa=False, confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                           is_isa=False, confidence=1.0, source="gutask", priority=True)
    scripted_llm.reply(json.dumps({"decision": "update", "reasoning": "moved last week"}))

    run_now(workspace)

    assert edges_of(workspace, "dobby") == [("worker_pool", "membership")]
    assert not Edge.objects.filter(pk=old.pk).exists()
    history = EdgeHistory.objects.get(workspace=workspace)
    assert (history.action, history.parent.token, history.confidence, history.source) == (
        "removed", "agent_pool", 0.9, "cloud_llm")
    assert Conflict.objects.get(pk=conflict.pk).status == "resolved"


def test_t38_dismiss_leaves_the_world_unchanged(workspace, scripted_llm):
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                           is_isa=False, confidence=0.5, source="inferred")
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "the existing fact is right"}))

    run = run_now(workspace)

    assert (run.processed, run.dismissed) == (1, 1)
    assert edges_of(workspace, "dobby") == [("agent_pool", "membership")]
    assert Conflict.objects.get(pk=conflict.pk).status == "dismissed"
    assert not EdgeHistory.objects.exists()


def test_a_misclassification_places_the_incoming_fact_in_the_suggested_dimension(workspace, scripted_llm):
    insert_fact(workspace=workspace, concept="michigan", parent="state", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    conflict = insert_fact(workspace=workspace, concept="michigan", parent="usa", dimension="type",
                           is_isa=False, confidence=0.9, source="inferred")
    assert conflict.collision_type == "misclassification"
    scripted_llm.reply(json.dumps({"decision": "misclassification", "dimension": "geography", "reasoning": "place"}))

    run_now(workspace)

    assert edges_of(workspace, "michigan") == [("state", "type"), ("usa", "geography")]
    assert Conflict.objects.get(pk=conflict.pk).status == "resolved"


@pytest.mark.parametrize("answer, error", [
    ("I think gnommoweb is both", "not JSON"),
    (json.dumps(["decompose"]), "not a JSON object"),
    (json.dumps({"decision": "update_everything"}), "does not apply"),
    (json.dumps({"decision": "misclassification", "dimension": "tech"}), "does not apply"),
    (json.dumps({"decision": "decompose", "existing_dimension": "artifact-type"}), "new_dimension"),
    (json.dumps({"decision": "decompose", "existing_dimension": "x", "new_dimension": "x"}), "two different"),
])
def test_a_malformed_answer_leaves_the_conflict_pending_with_the_error(workspace, scripted_llm, test_b_state, answer,
                                                                       error):
    scripted_llm.reply(answer)

    run = run_now(workspace)

    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert conflict.status == "pending" and error in conflict.error and conflict.attempts == 1
    assert (run.processed, run.failed, run.resolved) == (1, 1, 0)
    assert edges_of(workspace, "gnommoweb") == [("repo", "type")]


def test_a_failed_model_call_leaves_the_conflict_pending(workspace, scripted_llm, test_b_state):
    scripted_llm.fail("bad_request")

    run_now(workspace)

    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert conflict.status == "pending" and conflict.error and conflict.attempts == 1


def test_a_transient_error_is_raised_for_the_tasks_retry_and_leaves_the_conflict_untouched(
        workspace, scripted_llm, monkeypatch, test_b_state):
    def connection_reset(**_kwargs):
        raise OperationalError("the connection was reset")

    monkeypatch.setattr("festinger.resolution.complete", connection_reset)

    with pytest.raises(OperationalError):
        run_now(workspace)

    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert (conflict.status, conflict.attempts, conflict.error) == ("pending", 0, "")
    assert ResolutionRun.objects.get(workspace=workspace).status == "running"  # the retry carries it on


def test_the_tasks_time_running_out_fails_the_run_not_the_conflict(workspace, scripted_llm, monkeypatch,
                                                                   test_b_state):
    from celery.exceptions import SoftTimeLimitExceeded

    from festinger.resolution import _WorkspaceLock

    def time_is_up(**_kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr("festinger.resolution.complete", time_is_up)

    run = run_now(workspace)

    assert run.status == "failed" and "SoftTimeLimitExceeded" in run.error
    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert (conflict.status, conflict.attempts, conflict.error) == ("pending", 0, "")
    lock = _WorkspaceLock(workspace.pk, 0)
    assert lock.acquire()  # the run let go of the workspace
    lock.release()


def test_a_run_whose_lock_expired_does_not_free_the_lock_another_run_took(workspace):
    from festinger.resolution import _WorkspaceLock

    key = f"festinger:resolution:lock:{workspace.pk}"
    first = _WorkspaceLock(workspace.pk, 1)
    assert first.acquire()
    get_redis().delete(key)  # its expiry passed while it ran
    second = _WorkspaceLock(workspace.pk, 2)
    assert second.acquire()

    first.release()

    assert not _WorkspaceLock(workspace.pk, 3).acquire()  # still the second run's
    second.release()
    assert not get_redis().exists(key)


def test_only_a_later_attempt_of_the_same_run_takes_its_lock_over(workspace):
    from festinger.resolution import _WorkspaceLock

    assert _WorkspaceLock(workspace.pk, 1).acquire()  # the attempt whose worker died

    assert not _WorkspaceLock(workspace.pk, 2).take_over()
    again = _WorkspaceLock(workspace.pk, 1)
    assert again.take_over()
    again.release()
    assert _WorkspaceLock(workspace.pk, 2).acquire()


def test_a_decision_that_cannot_be_applied_is_never_half_applied(workspace, scripted_llm, test_b_state):
    # gnommoweb already has a parent in deployment-type: the move to artifact-type must be undone too
    insert_fact(workspace=workspace, concept="gnommoweb", parent="kubernetes_pod",
                dimension="deployment-type", is_isa=True, confidence=0.9, source="cloud_llm")
    scripted_llm.reply(json.dumps(DECOMPOSE))

    run_now(workspace)

    conflict = Conflict.objects.get(pk=test_b_state.pk)
    assert conflict.status == "pending" and "already has another parent in [deployment-type]" in conflict.error
    assert edges_of(workspace, "gnommoweb") == [("kubernetes_pod", "deployment-type"), ("repo", "type")]
    assert not EdgeHistory.objects.exists()
    assert not Concept.objects.filter(workspace=workspace, token="artifact-type").exists()


def test_priority_conflicts_are_resolved_first(workspace, scripted_llm):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    inferred = insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                           is_isa=True, confidence=0.6, source="inferred")
    manual = insert_fact(workspace=workspace, concept="gnommoweb", parent="service", dimension="type",
                         is_isa=True, confidence=1.0, source="gutask", priority=True)
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "a"}))
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "b"}))

    run_now(workspace)

    prompts = [request.last_user_text for request in scripted_llm.sent]
    assert "gnommoweb ISA service" in prompts[0] and "gnommoweb ISA container" in prompts[1]
    assert Conflict.objects.get(pk=manual.pk).resolution["decision"]["reasoning"] == "a"
    assert Conflict.objects.get(pk=inferred.pk).resolution["decision"]["reasoning"] == "b"


def test_a_full_batch_continues_in_a_new_run(workspace, scripted_llm, test_b_state, django_capture_on_commit_callbacks):
    insert_fact(workspace=workspace, concept="dobby", parent="agent_pool", dimension="membership",
                is_isa=False, confidence=0.9, source="cloud_llm")
    insert_fact(workspace=workspace, concept="dobby", parent="worker_pool", dimension="membership",
                is_isa=False, confidence=0.5, source="inferred")
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "noise"}))

    with django_capture_on_commit_callbacks():
        first = run_now(workspace, limit=1, on_full_batch=resolution_request)  # what the task passes

    assert first.processed == 1
    assert ResolutionRun.objects.filter(workspace=workspace, trigger=f"continuation of run #{first.pk}",
                                        status="queued").count() == 1


def test_without_a_resolver_model_the_queue_waits(workspace, test_b_state):
    run = run_now(workspace)
    assert run.status == "finished" and "no model answers the 'resolver' role" in run.error
    assert Conflict.objects.get(pk=test_b_state.pk).status == "pending" and run.processed == 0


def test_the_configured_resolver_role_is_asked(workspace, test_b_state):
    from festinger.services import config_update, world_ensure

    config_update(config=world_ensure(workspace=workspace), resolver_role="arbiter")
    script = Script.install(workspace, roles=("arbiter",))
    try:
        script.reply(json.dumps({"decision": "dismiss", "reasoning": "noise"}))
        run_now(workspace)
        assert [r.role for r in script.sent] == ["arbiter"]
    finally:
        script.reset()
    assert Conflict.objects.get(pk=test_b_state.pk).status == "dismissed"


def test_a_second_run_while_one_holds_the_lock_is_skipped(workspace, scripted_llm, test_b_state):
    from festinger.resolution import _WorkspaceLock

    lock = _WorkspaceLock(workspace.pk, 0)
    assert lock.acquire()
    try:
        run = run_now(workspace)
    finally:
        lock.release()
    assert run.status == "skipped" and Conflict.objects.get(pk=test_b_state.pk).status == "pending"


def test_a_running_run_delivered_again_while_another_run_holds_the_lock_is_skipped(workspace, test_b_state):
    from festinger.resolution import _WorkspaceLock

    queued = resolution_request(workspace=workspace, trigger="test")
    # its worker died before the lock
    ResolutionRun.objects.filter(pk=queued.pk).update(status="running", task_id="the-delivery")
    lock = _WorkspaceLock(workspace.pk, queued.pk + 1)
    assert lock.acquire()
    try:
        run = resolution_execute(run_id=queued.pk, task_id="the-delivery")
    finally:
        lock.release()
    assert run.status == "skipped" and Conflict.objects.get(pk=test_b_state.pk).status == "pending"


@pytest.mark.parametrize("task_id", ["", "another-delivery"])
def test_a_run_another_attempt_is_running_is_left_to_it(workspace, scripted_llm, test_b_state, task_id):
    """The race a worker shared by the test session lost to an in-process call (or won): two callers
    for one queued run, the second finding it `running` under the first's claim and lock."""
    from festinger.resolution import _WorkspaceLock

    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "noise"}))
    queued = resolution_request(workspace=workspace, trigger="test")
    ResolutionRun.objects.filter(pk=queued.pk).update(status="running", task_id="the-worker's-delivery")
    running_attempt = _WorkspaceLock(workspace.pk, queued.pk)
    assert running_attempt.acquire()
    try:
        run = resolution_execute(run_id=queued.pk, task_id=task_id)

        assert (run.status, run.processed) == ("running", 0)
        assert scripted_llm.sent == [] and Conflict.objects.get(pk=test_b_state.pk).status == "pending"
        assert running_attempt.lock.owned()  # its lock is still its own
    finally:
        running_attempt.release()


def test_a_redelivered_run_does_nothing_twice(workspace, scripted_llm, test_b_state):
    scripted_llm.reply(json.dumps({"decision": "dismiss", "reasoning": "noise"}))
    queued = resolution_request(workspace=workspace, trigger="test")
    resolution_execute(run_id=queued.pk)
    again = resolution_execute(run_id=queued.pk)
    assert again.processed == 1 and len(scripted_llm.sent) == 1


def test_an_operator_decision_on_a_decided_conflict_is_refused(workspace, test_b_state):
    from fathom.errors import ConflictError

    conflict_apply(conflict_id=test_b_state.pk, decision={"decision": "dismiss"}, actor="operator:x")
    with pytest.raises(ConflictError):
        conflict_apply(conflict_id=test_b_state.pk, decision={"decision": "update"}, actor="operator:y")
    assert Conflict.objects.get(pk=test_b_state.pk).resolved_by == "operator:x"
