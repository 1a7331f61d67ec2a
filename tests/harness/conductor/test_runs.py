"""The conductor's invariants (seed 004, section 8), with the broker played in-process by the driver
(tests/harness/conductor/conftest.py) so a test chooses the order tasks run in and redelivers some:
bootstrap once, every ready item dispatched before any decision, the decision only when nothing is
ready or in flight, routing (researcher before terminal), every call in the graph."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from fathom.llm import Message, complete
from fathom.tracing import span
from fathom.tracing.models import TraceEvent
from festinger import cache as festinger_cache
from festinger.models import Concept
from festinger.services import insert_fact
from harness.conductor import policy, services, worker_port
from harness.conductor.models import AgendaItem, CapabilityCall, Decision, Run
from harness.conductor.selectors import run_graph
from harness.conductor.services import conductor_settings_get, run_cancel, run_create
from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.runtime import claims
from lake.services import delta_create

pytestmark = pytest.mark.django_db

TECH_NEWS = "whats tech news today"


def research_answers(script, body="Chips got faster today."):
    """A research fire's answers: web_search, then respond, then the review pass skips."""
    script.call_tool("web_search", {"query": "tech news today"})
    script.call_tool("respond", {"body": body})
    script.call_tool("skip", {})


def roles_sent(*scripts) -> list[str]:
    return [request.role for script in scripts for request in script.sent]


def test_a_simple_research_prompt_bootstraps_once_decides_at_most_twice_and_never_uses_the_terminal(
        workspace, driver, conductor_script, main_script):
    # given the terminal enabled, so that routing (not its absence) keeps it out
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "today's tech news"}]})
    conductor_script.call_tool("complete", {"answer": "Chips got faster today."})
    research_answers(main_script)

    run = run_create(workspace=workspace, objective=TECH_NEWS)
    driver.drain()

    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and run.answer == "Chips got faster today."
    decisions = list(run.decisions.values_list("kind", flat=True))
    assert decisions.count("bootstrap") == 1 and decisions.count("decide") <= 2
    assert len(conductor_script.sent) == 1 + decisions.count("decide")  # the conductor's model calls, all of them
    assert list(run.calls.values_list("worker", flat=True)) == ["researcher"]
    assert "web_search" in main_script.sent[0].tool_names
    assert not {"introspect", "mint_routine", "dispatch_helper"} & set(main_script.sent[0].tool_names)
    graph = run_graph(run=run)
    assert graph["totals"]["bootstrap_calls"] == 1 and graph["totals"]["decision_calls"] <= 2
    assert graph["totals"]["worker_calls"] == {"researcher": 1}
    assert not any(actor["actor_id"].startswith(("terminal:", "watcher")) for actor in graph["actors"])
    assert run.canon == [{"item": 1, "capability": "researcher", "ok": True, "result": "Chips got faster today."}]


@pytest.mark.parametrize("objective", [TECH_NEWS, "search the web for the latest rust release", "news about AI"])
def test_news_and_web_objectives_route_to_the_researcher_even_with_the_terminal_enabled(workspace, driver, objective):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    run = run_create(workspace=workspace, objective=objective)  # the offline model
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    assert list(run.calls.values_list("worker", flat=True)) == ["researcher"]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_local_shell_objective_routes_to_the_terminal_only_when_enabled(workspace, driver, enabled,
                                                                          bwrap_installed):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = enabled
    limits.save()
    run = run_create(workspace=workspace, objective="in the local shell, run `echo conducted`")
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    workers = list(run.calls.values_list("worker", flat=True))
    if enabled:
        assert run.capabilities == ["researcher", "terminal"] and workers == ["terminal"]
        assert "conducted" in run.calls.get().result
    else:
        assert run.capabilities == ["researcher"] and workers == ["researcher"]


def test_bootstrap_never_runs_again_however_often_steps_are_redelivered(workspace, driver, conductor_script,
                                                                        main_script):
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "news"}]})
    conductor_script.call_tool("complete", {"answer": "done"})
    research_answers(main_script)
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    for _ in range(5):
        services.run_step(run_id=run.pk)  # steps redelivered before, during and after the work
    driver.drain(rng=random.Random(7), redeliver=1.0)
    for _ in range(3):
        services.run_step(run_id=run.pk)
    assert Decision.objects.filter(run=run, kind="bootstrap").count() == 1
    assert [r.tool_names for r in conductor_script.sent].count(["set_agenda"]) == 1
    assert CapabilityCall.objects.filter(run=run).count() == 1


def test_decision_is_never_called_while_items_are_ready_or_in_flight_over_random_agenda_shapes(
        workspace, driver, conductor_script, monkeypatch):
    rng = random.Random(2026)
    executed: list[str] = []
    decided_over: list[dict] = []
    real_decide = policy.decide

    def execute(*, call, limits):
        executed.append(call.call_id)
        ok = rng.random() > 0.15
        return worker_port.WorkerOutcome(ok, f"result of {call.item.number}" if ok else "error: it failed", 1)

    def spying_decide(*, workspace, state, actor_id=""):
        run = Run.objects.get(pk=actor_id.removeprefix("conductor:"))
        busy = AgendaItem.objects.filter(run=run, state__in=["ready", "in_flight"]).count()
        decided_over.append({"run": run.pk, "busy": busy})
        return real_decide(workspace=workspace, state=state, actor_id=actor_id)

    monkeypatch.setattr(worker_port, "execute", execute)
    monkeypatch.setattr(policy, "decide", spying_decide)
    runs = []
    for _ in range(30):
        size = rng.randint(0, 6)
        items = [{"capability": "researcher", "task": f"part {n}",
                  "depends_on": rng.sample(range(1, n), k=rng.randint(0, min(2, n - 1)))} for n in range(1, size + 1)]
        conductor_script.call_tool("set_agenda", {"items": items})
        spawns = rng.randint(0, 2)
        for n in range(spawns):
            conductor_script.call_tool("spawn_worker", {"capability": "researcher", "task": f"more {n}"})
        conductor_script.call_tool("complete", {"answer": "all done"})
        run = run_create(workspace=workspace, objective=f"shape {size}+{spawns}")
        driver.drain(rng=rng, redeliver=0.3)
        runs.append((run, size + spawns, spawns + 1))

    assert decided_over and all(entry["busy"] == 0 for entry in decided_over)
    assert len(executed) == len(set(executed))  # no call carried out twice
    for run, item_count, decisions in runs:
        run.refresh_from_db()
        assert run.status == Run.Status.COMPLETED
        assert Decision.objects.filter(run=run, kind="bootstrap").count() == 1
        assert run.decisions_made == decisions
        calls = CapabilityCall.objects.filter(run=run)
        assert calls.count() == AgendaItem.objects.filter(run=run).exclude(
            result="not run: an item it depends on failed").count()
        assert AgendaItem.objects.filter(run=run).count() == item_count
    assert conductor_script.pending == 0


def test_output_the_policy_cannot_use_is_recorded_and_the_run_goes_on(workspace, driver, conductor_script,
                                                                     main_script):
    conductor_script.reply("I think we should look it up.")  # a bootstrap without set_agenda: an empty agenda
    conductor_script.call_tool("spawn_worker", {"capability": "telepathy", "task": "x"})  # no such capability
    conductor_script.call_tool("spawn_worker", {"capability": "researcher", "task": "news"})
    conductor_script.call_tool("complete", {"answer": "done"})
    research_answers(main_script)
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    rows = list(run.decisions.order_by("number").values_list("kind", "action", "error"))
    assert rows[0][0] == "bootstrap" and rows[0][2].startswith("no_action")
    assert rows[1][1] == "" and rows[1][2].startswith("malformed")
    assert [row[1] for row in rows[2:]] == ["SpawnWorker", "Complete"]


def test_a_run_whose_decisions_keep_failing_is_blocked_at_the_decision_cap(workspace, driver, conductor_script):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.max_decisions = 3
    limits.save()
    conductor_script.call_tool("set_agenda", {"items": []})
    for _ in range(3):
        conductor_script.reply("no tool")
    run = run_create(workspace=workspace, objective="something impossible")
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.BLOCKED and "3 decisions" in run.answer
    assert len(conductor_script.sent) == 4


def test_every_model_and_tool_call_appears_in_the_graph_with_run_scoped_ids(workspace, driver, bwrap_installed):
    delta_create(workspace=workspace, content="Tech news: a new chip doubles battery life", source="feed")
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    runs = [run_create(workspace=workspace, objective="tech news about chips"),
            run_create(workspace=workspace, objective="in the local shell, run `echo hi`")]
    driver.drain()
    for run in runs:
        run.refresh_from_db()
        graph = run_graph(run=run)
        events = TraceEvent.objects.filter(workspace=workspace, trace_id=run.trace_id)
        model_calls = set(events.filter(kind="llm.call.started").values_list("call_id", flat=True))
        tool_spans = set(events.filter(kind="worker.tool.call").values_list("span_id", flat=True))
        conductor = graph["tree"]["children"][0]
        in_graph = {c["call_id"] for c in conductor["calls"]} | {
            call_id for worker in conductor["children"] for call_id in worker["model_call_ids"]}
        assert model_calls and model_calls == in_graph
        assert tool_spans and tool_spans == {t["span_id"] for w in conductor["children"] for t in w["children"]}
        assert sum(a["model_calls"] for a in graph["actors"]) == len(model_calls)
        nodes = [*conductor["calls"], *(t for w in conductor["children"] for t in w["children"])]
        assert all(node["run_id"] == str(run.pk) for node in [*nodes, *conductor["children"]])
        assert set(events.values_list("trace_id", flat=True)) == {run.trace_id}
        assert events.filter(kind="trace.prompt.received", span_id=run.root_span_id, run_id=str(run.pk)).exists()
    # the conductor's own calls carry the run's id as their run id
    assert TraceEvent.objects.filter(kind="llm.call.started", actor_id=runs[0].actor_id,
                                     run_id=str(runs[0].pk)).count() == 2


def test_a_cancelled_run_stops_and_its_dispatched_calls_do_not_run(workspace, driver, monkeypatch):
    ran = []
    monkeypatch.setattr(worker_port, "execute", lambda **kwargs: ran.append(1))
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    kind, run_id = driver.pending.pop(0)
    services.run_step(run_id=run_id)  # bootstrap and dispatch
    run_cancel(run=run)
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and not ran
    assert CapabilityCall.objects.get(run=run).status == "failed"


def test_terminal_calls_are_zero_unless_the_objective_asks_for_the_shell_whatever_the_model_says(
        workspace, driver, conductor_script, main_script):
    limits = conductor_settings_get(workspace_id=workspace.pk)
    limits.terminal_enabled = True
    limits.save()
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "terminal", "task": "curl news",
                                                         "command": "curl news.example"},
                                                        {"capability": "researcher", "task": "news"}]})
    conductor_script.call_tool("spawn_worker", {"capability": "terminal", "task": "curl", "command": "curl x"})
    conductor_script.call_tool("complete", {"answer": "done"})
    research_answers(main_script)
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    driver.drain()
    run.refresh_from_db()
    assert run.capabilities == ["researcher"]
    assert "terminal" not in conductor_script.sent[0].tools[0]["parameters"]["properties"]["items"]["items"][
        "properties"]["capability"]["enum"]
    assert list(run.calls.values_list("worker", flat=True)) == ["researcher"]
    assert run.decisions.get(kind="bootstrap").payload["dropped"] == ["terminal"]
    assert run.decisions.get(number=1).error.startswith("malformed")  # spawn_worker(terminal): not offered


def test_the_sweep_enqueues_calls_and_steps_whose_worker_is_gone(workspace, driver):
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    driver.pending.clear()  # the step's message was lost
    assert services.runs_sweep(stale_after_seconds=3600) == []  # too young to be called lost
    Run.objects.filter(pk=run.pk).update(created_at=run.created_at - timedelta(hours=2))
    assert services.runs_sweep(stale_after_seconds=3600) == [run.pk]
    kind, run_id = driver.pending.pop()
    services.run_step(run_id=run_id)  # bootstrap, dispatch; the call's message is lost too
    driver.pending.clear()
    call = CapabilityCall.objects.get(run=run)
    CapabilityCall.objects.filter(pk=call.pk).update(created_at=call.created_at - timedelta(hours=2),
                                                     runner="otherhost:1:1", status="running")
    assert services.runs_sweep(stale_after_seconds=3600) == [call.pk]  # its runner went silent
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED


def test_a_step_whose_runner_died_in_the_bootstrap_is_taken_over_and_bootstraps_once(workspace, driver):
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    host = claims.runner_id().split(":")[0]
    Run.objects.filter(pk=run.pk).update(runner=f"{host}:{2**22 + 7}:1", runner_heartbeat_at=timezone.now())
    driver.drain()  # the redelivered step finds the claim held by a process that no longer exists
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and run.runner == ""
    assert Decision.objects.filter(run=run, kind="bootstrap").count() == 1


def test_await_worker_with_nothing_running_and_merge_canon_are_recorded_and_the_run_goes_on(
        workspace, driver, conductor_script, main_script):
    conductor_script.call_tool("set_agenda", {"items": [{"capability": "researcher", "task": "news"}]})
    conductor_script.call_tool("await_worker", {"reason": "maybe something runs"})
    conductor_script.call_tool("merge_canon", {"reason": "keep it"})
    conductor_script.call_tool("block", {"reason": "the news is paywalled"})
    research_answers(main_script, body="Paywalled.")
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    driver.drain()
    run.refresh_from_db()
    assert [d.action for d in run.decisions.filter(kind="decide")] == ["AwaitWorker", "MergeCanon", "Block"]
    assert run.status == Run.Status.BLOCKED and run.answer == "the news is paywalled"
    assert run.canon == [{"item": 1, "capability": "researcher", "ok": True, "result": "Paywalled."}]
    assert AgendaItem.objects.get(run=run).merged


def test_the_sweep_leaves_a_researcher_whose_fire_is_alive(workspace, driver):
    run = run_create(workspace=workspace, objective=TECH_NEWS)
    services.run_step(run_id=driver.pending.pop()[1])
    driver.pending.clear()
    call = CapabilityCall.objects.get(run=run)
    fire = fire_create(workspace=workspace, mode="reactive", question="news", spawned_by=f"conductor:{call.call_id}")
    Fire.objects.filter(pk=fire.pk).update(runner=claims.runner_id(), runner_heartbeat_at=timezone.now())
    CapabilityCall.objects.filter(pk=call.pk).update(created_at=call.created_at - timedelta(hours=2), fire=fire,
                                                     runner="otherhost:1:1", status="running")
    assert services.runs_sweep(stale_after_seconds=3600) == []
    Fire.objects.filter(pk=fire.pk).update(runner="")
    assert services.runs_sweep(stale_after_seconds=3600) == [call.pk]


class AskTheWriter:
    """Model middleware making a call of another actor inside every call it sees, as Festinger's
    writer does when it learns from a conversation."""

    def before(self, request):
        if request.role != "writer":
            with span("festinger.write", workspace=request.workspace_id, actor_id="festinger.writer"):
                complete(workspace=request.workspace_id, role="writer", messages=[Message.user("learn: kilns")])


def test_the_conductors_calls_run_no_middleware_and_every_call_is_labelled_by_its_role(workspace, driver, settings):
    # given a middleware that would ask the writer inside every call it sees
    settings.FATHOM_MODEL_MIDDLEWARE = [*settings.FATHOM_MODEL_MIDDLEWARE, f"{__name__}.AskTheWriter"]
    run = run_create(workspace=workspace, objective="what do we know about the kiln glaze?")
    driver.drain()
    run.refresh_from_db()

    graph = run_graph(run=run)

    # then the conductor's bootstrap and decision ran with a fresh context: no writer call inside them
    conductor = graph["tree"]["children"][0]
    assert [(call["phase"], call["role"]) for call in conductor["calls"]] == [
        ("bootstrap", "conductor"), ("decide", "conductor")]
    assert (graph["totals"]["bootstrap_calls"], graph["totals"]["decision_calls"]) == (1, 1)
    # and the researcher's calls, the writer's among them, are labelled by their roles
    researcher = graph["tree"]["children"][0]["children"][0]
    assert researcher["model_calls_by_role"]["writer"] >= 1 and researcher["model_calls_by_role"]["main"] == 2
    assert sum(graph["totals"]["model_calls_by_role"].values()) == graph["totals"]["model_calls"]


def test_a_run_with_no_key_makes_exactly_the_calls_the_docs_state(workspace, driver):
    # given a workspace whose world model (Festinger) would recall into and learn from every conversation
    insert_fact(workspace=workspace, concept="kiln", parent="tool", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    Concept.objects.update_or_create(workspace=workspace, token="kiln", defaults={"encounter_count": 50})
    festinger_cache.world_reload(workspace.pk)
    try:
        run = run_create(workspace=workspace, objective="what do we know about the kiln glaze?")
        driver.drain()
    finally:
        festinger_cache.forget(workspace.pk)
    run.refresh_from_db()
    # then (docs/conductor.md) the bootstrap and one decision, and the researcher fire's own: its two
    # turns (search, respond) and its review pass: no writer call learning from the conductor's briefs
    calls = TraceEvent.objects.filter(trace_id=run.trace_id, kind="llm.call.started")
    roles = sorted(calls.values_list("payload__role", flat=True))
    assert roles == ["conductor", "conductor", "main", "main", "review"]
    assert run_graph(run=run)["totals"]["model_calls"] == 5
