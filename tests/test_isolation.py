"""Every workspace sees only its own rows: each app's endpoints join the CASES below."""

import uuid

import pytest

from fathom.models import ApiKey
from tests.isolation import IsolationCase, Probe, assert_isolated


def apikeys_case(owner) -> IsolationCase:
    created = owner.post("/v1/apikeys", {"role": "viewer", "name": "a's key"}, format="json").json()
    return IsolationCase(
        list_path="/v1/apikeys",
        ids=[created["id"]],
        probes=[Probe("POST", f"/v1/apikeys/{created['id']}/revoke")],
        intact=lambda: ApiKey.objects.get(pk=created["id"]).revoked_at is None,
    )


def harness_sessions_case(owner) -> IsolationCase:
    from harness.runtime.models import Session, Trigger

    session = owner.post("/v1/sessions", {"title": "a's session"}, format="json").json()
    sid = session["id"]
    owner.post(f"/v1/sessions/{sid}/messages", {"content": "a's message"}, format="json")
    owner.post("/v1/profiles/agents", {"slug": "a-agent"}, format="json")
    return IsolationCase(
        list_path="/v1/sessions",
        ids=[sid],
        probes=[Probe("GET", f"/v1/sessions/{sid}"), Probe("GET", f"/v1/sessions/{sid}/events"),
                Probe("GET", f"/v1/sessions/{sid}/messages"),
                Probe("POST", f"/v1/sessions/{sid}/messages", {"content": "intruder"}),
                Probe("POST", f"/v1/sessions/{sid}/refresh-profile"),
                Probe("GET", "/v1/profiles/agents/a-agent"),
                Probe("PATCH", "/v1/profiles/agents/a-agent", {"soul_md": "intruded"})],
        intact=lambda: (Trigger.objects.filter(session_id=sid).count() == 1
                        and Session.objects.get(pk=sid).title == "a's session"),
    )


def harness_fires_case(owner) -> IsolationCase:
    from harness.fires.models import Fire
    from harness.runtime.models import Trigger

    sid = owner.post("/v1/sessions", {"title": "a's session"}, format="json").json()["id"]
    fid = owner.post("/v1/introspect", {"question": "a's question"}, format="json").json()["fire_id"]
    return IsolationCase(
        list_path="/v1/fires",
        ids=[fid],
        probes=[Probe("GET", f"/v1/fires/{fid}"), Probe("POST", f"/v1/fires/{fid}/cancel"),
                Probe("GET", f"/v1/fires?session={sid}"), Probe("POST", f"/v1/sessions/{sid}/sit", {"prompt": "intruder"}),
                Probe("GET", f"/v1/sessions/{sid}/events?after=0")],
        intact=lambda: (Fire.objects.get(pk=fid).cancel_requested_at is None
                        and not Trigger.objects.filter(session_id=sid).exists()),
    )


def harness_schedules_case(owner) -> IsolationCase:
    from harness.runtime.models import SessionSchedule

    sid = owner.post("/v1/sessions", {"title": "a's session"}, format="json").json()["id"]
    created = owner.post(f"/v1/sessions/{sid}/schedules", {"kind": "cron", "cron": "0 9 * * *",
                                                          "content": "a's morning note"}, format="json").json()
    return IsolationCase(  # the list is per session: another workspace's session is a 404, probed below
        probes=[Probe("GET", f"/v1/schedules/{created['id']}"), Probe("DELETE", f"/v1/schedules/{created['id']}"),
                Probe("GET", f"/v1/sessions/{sid}/schedules"),
                Probe("POST", f"/v1/sessions/{sid}/schedules", {"kind": "heartbeat", "every_seconds": 60})],
        intact=lambda: list(SessionSchedule.objects.filter(session_id=sid).values_list("id", "periodic_task__enabled"))
        == [(uuid.UUID(created["id"]), True)],
    )


def harness_tasks_case(owner) -> IsolationCase:
    from harness.runtime.background import task_create
    from harness.runtime.models import Session, Task

    sid = owner.post("/v1/sessions", {"title": "a's session"}, format="json").json()["id"]
    task = task_create(session=Session.objects.get(pk=sid), tool="fs_read", arguments={"path": "fs://a-secret.md"},
                       idempotency_key=f"isolation:{sid}")
    owner.post("/v1/profiles/agents", {"slug": "a-agent", "memory": "a's memory"}, format="json")
    owner.patch("/v1/profiles/agents/a-agent", {"memory": "a's new memory"}, format="json")
    return IsolationCase(
        probes=[Probe("GET", f"/v1/tasks/{task.pk}"), Probe("POST", f"/v1/tasks/{task.pk}/cancel"),
                Probe("GET", f"/v1/sessions/{sid}/tasks"), Probe("GET", "/v1/profiles/agents/a-agent/history")],
        intact=lambda: Task.objects.get(pk=task.pk).state == task.state and not task.cancel_requested_by,
    )


def proposals_case(owner) -> IsolationCase:
    from proposals.models import Decision, Proposal

    body = {"tool": "routines", "title": "a's routine",
            "payload": {"name": "a-routine", "schedule": "0 9 * * *", "prompt": "p"}}
    created = owner.post("/v1/proposals/draft", body, format="json").json()
    path = f"/v1/proposals/{created['id']}"
    return IsolationCase(
        list_path="/v1/proposals",
        ids=[created["id"]],
        probes=[Probe("GET", path), Probe("POST", f"{path}/approve", {}), Probe("POST", f"{path}/deny", {"reason": "r"}),
                Probe("POST", f"{path}/approve", {"payload": body["payload"]})],
        intact=lambda: Proposal.objects.get(pk=created["id"]).status == "pending"
        and not Decision.objects.filter(proposal_id=created["id"]).exists(),
    )


def deltas_case(owner) -> IsolationCase:
    from lake.models import Delta

    created = owner.post("/v1/deltas", [
        {"content": "a's moment about the lighthouse", "tags": ["kind:a-secret-kind"], "source": "a-private-source"},
        {"content": "a's other moment about the lighthouse"}], format="json").json()
    ids = [row["id"] for row in created]
    before = list(Delta.objects.filter(pk__in=ids).order_by("id").values_list("id", "content", "tags"))
    return IsolationCase(
        list_path="/v1/deltas",
        ids=ids,
        probes=[Probe("GET", f"/v1/deltas/{ids[0]}"), Probe("GET", f"/v1/deltas/{ids[1][:8]}")],
        intact=lambda: list(Delta.objects.filter(pk__in=ids).order_by("id").values_list("id", "content", "tags"))
        == before,
        reads=[Probe("POST", "/v1/search", {"query": "lighthouse moment", "depth": "deep"}),
               Probe("GET", "/v1/lake/stats"), Probe("GET", "/v1/deltas?kind=a-secret-kind"),
               Probe("GET", "/v1/deltas?source=a-private-source")],
        secrets=["about the lighthouse", "a-secret-kind", "a-private-source"],
    )


def media_case(owner) -> IsolationCase:
    from lake.models import Media

    image = b"\x89PNG\r\n\x1a\n" + b"a's picture"
    created = owner.post("/v1/media", image, content_type="application/octet-stream").json()
    return IsolationCase(
        probes=[Probe("GET", f"/v1/media/{created['hash']}")],
        intact=lambda: bytes(Media.objects.get(hash=created["hash"]).data) == image,
    )


def traces_case(owner) -> IsolationCase:
    from fathom.llm import Message, complete
    from fathom.tracing import span
    from fathom.tracing.models import TraceEvent

    with span("trace.prompt", workspace=owner.workspace, actor_id="a-actor") as root:
        complete(workspace=owner.workspace, role="main", messages=[Message.user("a's question")])
    rows = TraceEvent.objects.filter(trace_id=root.trace_id).count()
    return IsolationCase(
        list_path="/v1/traces",
        ids=[root.trace_id],
        id_field="trace_id",
        probes=[Probe("GET", f"/v1/traces/{root.trace_id}")],
        intact=lambda: TraceEvent.objects.filter(trace_id=root.trace_id).count() == rows,
    )


def festinger_case(owner) -> IsolationCase:
    from festinger.models import Conflict, Edge

    owner.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa repo"}, format="json")
    conflict = owner.post("/v1/festinger/iknowthat", {"fact": "gnommoweb -isa container"}, format="json").json()
    conflict_id = conflict["conflict"]["id"]
    run_id = owner.post("/v1/festinger/resolve/run", {}, format="json").json()["id"]
    path = f"/v1/festinger/conflicts/{conflict_id}"
    edges = set(Edge.objects.filter(concept__token="gnommoweb").values_list("id", "parent__token", "dimension_id"))
    return IsolationCase(
        list_path="/v1/festinger/conflicts",
        ids=[conflict_id],
        probes=[Probe("GET", path), Probe("POST", f"{path}/dismiss", {"reason": "intruder"}),
                Probe("POST", f"{path}/resolve", {"decision": "update"}),
                Probe("GET", f"/v1/festinger/resolve/runs/{run_id}")],
        intact=lambda: Conflict.objects.get(pk=conflict_id).status == "pending"
        and set(Edge.objects.filter(concept__token="gnommoweb").values_list("id", "parent__token", "dimension_id"))
        == edges,
    )


def festinger_loops_case(owner) -> IsolationCase:
    from festinger.loops.guard import loop_events_record

    rows = loop_events_record(workspace_id=owner.workspace.pk, session="a-conversation",
                              events=[{"kind": "repeated_output", "level": 1, "detail": {"output": "a's secret"}}])
    return IsolationCase(list_path="/v1/festinger/loops", ids=[rows[0].pk],
                         reads=[Probe("GET", "/v1/festinger/loops?session=a-conversation")], secrets=["a's secret"])


def conductor_runs_case(owner) -> IsolationCase:
    from harness.conductor.models import Run

    rid = owner.post("/v1/runs", {"objective": "a's objective"}, format="json").json()["id"]
    return IsolationCase(
        list_path="/v1/runs",
        ids=[rid],
        probes=[Probe("GET", f"/v1/runs/{rid}"), Probe("GET", f"/v1/runs/{rid}/graph"),
                Probe("GET", f"/v1/runs/{rid}/events"), Probe("POST", f"/v1/runs/{rid}/cancel")],
        intact=lambda: Run.objects.get(pk=rid).status == Run.Status.ACCEPTED,
        secrets=["a's objective"],
    )


def autonomy_case(owner) -> IsolationCase:
    from harness.autonomy.models import AutonomySettings, InboxMark

    directive = owner.post("/v1/deltas", {"content": "a's directive", "tags": ["kind:directive"]},
                           format="json").json()["id"]
    owner.put("/v1/autonomy/settings", {"mode": "on", "threshold": 1.0}, format="json")
    run = owner.post("/v1/producers/topical/run", {}, format="json").json()["id"]
    return IsolationCase(
        list_path="/v1/autonomy/inbox",
        ids=[directive],
        probes=[Probe("POST", f"/v1/autonomy/inbox/{directive}", {"action": "dismiss"}),
                Probe("GET", f"/v1/producer-runs/{run}"), Probe("GET", f"/v1/deltas/{directive}/why")],
        intact=lambda: (not InboxMark.objects.filter(delta_id=directive).exists()
                        and AutonomySettings.objects.get(workspace=owner.workspace).mode == "on"),
        reads=[Probe("GET", "/v1/autonomy/directives"), Probe("GET", "/v1/autonomy/decisions")],
        secrets=[directive],
    )


def llm_models_case(owner) -> IsolationCase:
    from fathom.llm.models import LLMModel

    created = owner.post("/v1/llm/models", {"name": "a-model", "provider": "openai-compatible", "model": "m",
                                            "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-a-secret-AAAA"},
                         format="json").json()
    owner.put("/v1/llm/roles/main", {"model": "a-model"}, format="json")
    return IsolationCase(
        list_path="/v1/llm/models", ids=[created["name"]], id_field="name",
        probes=[Probe("GET", "/v1/llm/models/a-model"), Probe("PATCH", "/v1/llm/models/a-model", {"model": "x"}),
                Probe("DELETE", "/v1/llm/models/a-model"), Probe("POST", "/v1/llm/models/a-model/test", {}),
                Probe("PUT", "/v1/llm/roles/main", {"model": "a-model"})],
        intact=lambda: (LLMModel.objects.get(workspace=owner.workspace, name="a-model").model == "m"
                        and not LLMModel.objects.exclude(workspace=owner.workspace).filter(name="a-model").exists()),
        reads=[Probe("GET", "/v1/llm/roles"), Probe("GET", "/v1/quality/settings"),
               Probe("GET", "/v1/quality/calibration")],
        secrets=["AAAA"],
    )


CASES = [apikeys_case, harness_sessions_case, harness_fires_case, proposals_case, deltas_case, media_case,
         festinger_case, traces_case, harness_tasks_case, conductor_runs_case, autonomy_case, festinger_loops_case,
         harness_schedules_case, llm_models_case]


@pytest.mark.parametrize("build_case", CASES, ids=lambda f: f.__name__)
def test_a_workspace_cannot_reach_another_workspaces_rows(build_case, workspace, other_workspace, api_client_for):
    owner = api_client_for(workspace, "owner")
    intruder = api_client_for(other_workspace, "owner")
    case = build_case(owner)
    assert case.ids or case.probes, "an isolation case must check something"

    assert_isolated(case, intruder)

    # And the rows are still there for their owner, unchanged by the intruder's attempts.
    if case.list_path:
        from tests.isolation import listed_ids

        assert set(case.ids) <= listed_ids(owner, case.list_path, case.id_field)
