"""The model registry and the quality settings over REST: each workspace sees and changes only its own
models, owners write, a key is write-only, base URLs on the deployment's allow-list, an audit record
of every change; and one application's whole setup with nothing but REST and an owner key."""

import pytest

from fathom.llm.services import model_create, model_share
from fathom.tracing.models import TraceEvent
from harness.quality.models import QualityRun
from tests.fathom.wire import WireServer
from tests.harness.quality.conftest import verdict, verify_all
from tests.harness.support import session_tick

KEY = "sk-tenant-model-key-0123WXYZ"


@pytest.fixture
def wire():
    server = WireServer().start()
    yield server
    server.stop()


@pytest.fixture
def owner(workspace, api_client_for):
    return api_client_for(workspace, "owner")


def register(client, name, url, **extra):
    return client.post("/v1/llm/models", {"name": name, "provider": "openai-compatible", "model": "local-model",
                                          "base_url": f"{url}/v1", "api_key": KEY, **extra}, format="json")


def test_two_workspaces_each_list_only_their_own_model_and_b_reaches_none_of_as(
        workspace, other_workspace, api_client_for, wire):
    a, b = api_client_for(workspace, "owner"), api_client_for(other_workspace, "owner")
    assert register(a, "alpha", wire.url).status_code == 201
    assert register(b, "beta", wire.url).status_code == 201

    assert [m["name"] for m in a.get("/v1/llm/models").json()] == ["alpha"]
    assert [m["name"] for m in b.get("/v1/llm/models").json()] == ["beta"]
    for method, path, body in [("get", "/v1/llm/models/alpha", None), ("patch", "/v1/llm/models/alpha", {"model": "x"}),
                               ("post", "/v1/llm/models/alpha/test", {}), ("delete", "/v1/llm/models/alpha", None),
                               ("put", "/v1/llm/roles/main", {"model": "alpha"})]:
        response = getattr(b, method)(path, body, format="json")
        assert response.status_code == 404, (method, path, response.content)
        assert response.json()["error"]["code"] == "not_found"
    assert wire.requests == []
    assert a.get("/v1/llm/models/alpha").json()["model"] == "local-model"


def test_the_key_is_write_only_and_only_owners_write(workspace, api_client_for, wire):
    owner, operator, viewer = (api_client_for(workspace, role) for role in ("owner", "operator", "viewer"))
    assert register(operator, "m", wire.url).status_code == 403
    assert register(viewer, "m", wire.url).status_code == 403

    created = register(owner, "m", wire.url).json()

    assert "api_key" not in created and created["api_key_hint"] == "…WXYZ" and KEY not in str(created)
    assert KEY not in viewer.get("/v1/llm/models").content.decode()
    assert viewer.put("/v1/llm/roles/main", {"model": "m"}, format="json").status_code == 403
    assert viewer.delete("/v1/llm/models/m").status_code == 403
    changed = owner.patch("/v1/llm/models/m", {"api_key": "sk-rotated-7777"}, format="json").json()
    assert changed["api_key_hint"] == "…7777" and changed["model"] == "local-model"


def test_a_base_url_outside_the_allow_list_is_a_400_naming_the_setting(owner, settings, wire):
    settings.OPENAI_API_KEY = "sk-deployment-env"
    response = owner.post("/v1/llm/models", {"name": "leak", "provider": "openai", "model": "gpt-4o-mini",
                                             "base_url": "https://collector.example.net/v1"}, format="json")
    assert response.status_code == 400 and "FATHOM_MODEL_BASE_URLS" in response.json()["error"]["message"]
    assert response.json()["error"]["details"]["setting"] == "FATHOM_MODEL_BASE_URLS"

    settings.FATHOM_MODEL_ALLOW_LOOPBACK = False
    refused = register(owner, "local", wire.url)
    assert refused.status_code == 400 and "FATHOM_MODEL_ALLOW_LOOPBACK" in refused.json()["error"]["message"]
    official = owner.post("/v1/llm/models", {"name": "gpt", "provider": "openai", "model": "gpt-4o-mini",
                                             "base_url": "https://api.openai.com/v1"}, format="json")
    assert official.status_code == 201 and official.json()["api_key_hint"] == ""


def test_a_shared_deployment_model_is_listed_read_only_without_its_key(owner, workspace, other_workspace, wire):
    shared = model_create(workspace=None, name="house", provider="openai-compatible", model="m",
                          base_url=f"{wire.url}/v1", api_key="sk-deployment-secret-9999")
    model_create(workspace=None, name="unshared", provider="offline", model="offline")
    model_share(model=shared, workspaces=[workspace])

    listed = {m["name"]: m for m in owner.get("/v1/llm/models").json()}

    assert set(listed) == {"house"} and listed["house"]["shared"] and listed["house"]["api_key_hint"] == ""
    assert owner.patch("/v1/llm/models/house", {"model": "x"}, format="json").status_code == 404
    assert owner.delete("/v1/llm/models/house").status_code == 404
    assert owner.put("/v1/llm/roles/main", {"model": "house"}, format="json").status_code == 200
    assert owner.put("/v1/llm/roles/main", {"model": "unshared"}, format="json").status_code == 404


def test_every_change_leaves_its_audit_record_in_the_workspace(owner, workspace, wire):
    register(owner, "m", wire.url)
    owner.put("/v1/llm/roles/main", {"model": "m"}, format="json")
    owner.delete("/v1/llm/roles/main")
    owner.delete("/v1/llm/models/m")

    kinds = list(TraceEvent.objects.filter(workspace=workspace, kind__startswith="llm.registry.",
                                           kind__endswith=".completed").order_by("at").values_list("kind", "actor_id"))
    actor = f"operator:apikey:{owner._credentials['HTTP_AUTHORIZATION'].split()[1][:12]}"
    assert [kind for kind, _ in kinds] == [f"llm.registry.{c}.completed" for c in
                                          ("created", "assigned", "unassigned", "deleted")]
    assert all(who.startswith("operator:apikey:") for _, who in kinds), (kinds, actor)


@pytest.mark.parametrize(("body", "field"), [
    ({"retry_policies": {"nonsense": {"max_attempts": 2}}}, "retry_policies"),
    ({"retry_policies": {"chat": {"good_enough_score": 2}}}, "retry_policies"),
    ({"swarm_specialists": "evidence"}, "swarm_specialists"),
    ({"swarm_min_sources": 0}, "swarm_min_sources"),
    ({"contracts": {"nonsense": {"min_output_chars": 80}}}, "contracts"),
    ({"contracts": {"chat": {"min_output_chars": -1}}}, "contracts"),
    ({"contracts": {"chat": {"min_output_chars": "long"}}}, "contracts"),
    ({"contracts": {"chat": {"max_words": 80}}}, "contracts"),
    ({"contracts": {"chat": {"require_citations": "yes"}}}, "contracts"),
    ({"contracts": ["chat"]}, "contracts"),
])
def test_bad_quality_settings_are_a_400(owner, body, field):
    response = owner.patch("/v1/quality/settings", body, format="json")
    assert response.status_code == 400 and field in str(response.json()["error"]["details"])


def test_a_viewer_reads_the_quality_settings_and_changes_none(workspace, api_client_for):
    viewer = api_client_for(workspace, "viewer")
    assert viewer.get("/v1/quality/settings").status_code == 200
    assert viewer.patch("/v1/quality/settings", {"swarm_enabled": True}, format="json").status_code == 403
    assert viewer.post("/v1/quality/calibration").status_code == 403


def test_an_application_sets_a_workspace_up_with_rest_alone(owner, wire, settings):
    settings.FATHOM_QUALITY_DEFAULT_ENABLED = True
    # register a model at a local OpenAI-compatible server, and test it: one call, its trace returned
    assert register(owner, "local", wire.url).status_code == 201
    wire.answer("Hello from the local model.")
    tried = owner.post("/v1/llm/models/local/test", {"prompt": "Say hello."}, format="json").json()
    assert tried["ok"] and tried["reply"] == "Hello from the local model."
    assert tried["trace"]["trace_id"] == tried["trace_id"] and tried["trace"]["totals"]["model_calls"] == 1
    assert wire.requests[-1][2]["authorization"] == f"Bearer {KEY}"
    # assign it to main and verifier, switch the swarm on, tune a retry threshold
    for role in ("main", "verifier"):
        assert owner.put(f"/v1/llm/roles/{role}", {"model": "local"}, format="json").status_code == 200
    assert {r["role"]: r["model"] for r in owner.get("/v1/llm/roles").json()} == {"main": "local", "verifier": "local"}
    tuned = owner.patch("/v1/quality/settings", {"swarm_enabled": True, "swarm_specialists": ["evidence", "gaps"],
                                                 "retry_policies": {"chat": {"max_attempts": 1}}}, format="json").json()
    assert tuned["swarm_enabled"] and tuned["specialists"] == ["evidence", "gaps"]
    assert tuned["retry_policies"]["chat"]["max_attempts"] == 1
    # ask a question; the worker's tick answers it with the main model, the verifier judges it
    session = owner.post("/v1/sessions", {"title": "setup"}, format="json").json()["id"]
    assert owner.post(f"/v1/sessions/{session}/messages", {"content": "What is the capital of France?"},
                      format="json").status_code == 202
    wire.answer(tool_calls=[("respond", {"body": "Paris is the capital of France."})])
    wire.answer(verdict(0.3, passed=False, feedback="too thin"))
    wire.always(200, wire_skip())
    outcome = session_tick(session_id=session)
    run = QualityRun.objects.get(fire__session_id=session)
    if outcome == "parked":
        verify_all(run)
        outcome = session_tick(session_id=session)
    fire = owner.get(f"/v1/fires?session={session}").json()["results"][0]
    assert fire["status"] == "finished", fire
    # read its feedback and the calibration the verifier now uses
    assert owner.post(f"/v1/fires/{fire['id']}/feedback", {"rating": "up", "comment": "exactly right"},
                      format="json").status_code == 201
    feedback = owner.get("/v1/quality/feedback").json()["results"]
    assert [(f["rating"], f["comment"]) for f in feedback] == [("up", "exactly right")]
    calibration = owner.post("/v1/quality/calibration").json()
    assert calibration["feedback"] == 1 and calibration["built_at"]
    assert owner.get("/v1/quality/calibration").json()["calibration"] == calibration["calibration"]
    assert "You scored 0.30 an answer the user liked" in calibration["calibration"]


def wire_skip() -> dict:
    return {"id": "chatcmpl-skip", "object": "chat.completion", "created": 0, "model": "local-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{"id": "call_skip", "type": "function", "function": {
                    "name": "skip", "arguments": '{"reason": "-"}'}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

