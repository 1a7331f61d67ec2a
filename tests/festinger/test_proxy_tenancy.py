"""The proxy and the model registry's tenancy: a workspace lists and calls only its own models (and the
deployment's shared with it), on both ports; a workspace's model never carries the deployment's key; a
viewer's key calls no model on the main port."""

import httpx
import pytest

from fathom.asgi import application as main_application
from fathom.errors import ApplicationError
from fathom.llm.services import model_create, model_share
from festinger import cache
from festinger.proxy.serve import MODEL_CALLING_PATHS, own_port_app
from festinger.services import world_ensure
from tests.fathom.wire import WireServer
from tests.festinger.proxy_support import serving

CALLS = [  # (path, body) of every proxy route that calls a model, naming `{model}`
    ("/api/chat", {"messages": [{"role": "user", "content": "hi"}], "stream": False}),
    ("/api/generate", {"prompt": "hi", "stream": False}),
    ("/api/embed", {"input": "hi"}),
    ("/api/embeddings", {"prompt": "hi"}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/embeddings", {"input": "hi"}),
]
LOOKUPS = [("/api/show", {})]
ENV_KEY = "sk-deployment-environment-0000"


@pytest.fixture
def tenants(transactional_db, workspace, other_workspace, settings, api_client_for):
    """Workspace A and B, each with a model at its own fake provider, no Ollama; the main port and both
    own ports. Yields a namespace of what the tests need."""
    settings.OLLAMA_HOST = ""
    settings.OPENAI_API_KEY = ENV_KEY
    wire_a, wire_b = WireServer().start(), WireServer().start()
    for ws, wire, name in ((workspace, wire_a, "alpha-model"), (other_workspace, wire_b, "beta-model")):
        world_ensure(workspace=ws)
        model_create(workspace=ws, name=name, provider="openai-compatible", model="m", base_url=f"{wire.url}/v1",
                     api_key=f"sk-{name}-key")
    keys = {role: api_client_for(other_workspace, role)._credentials["HTTP_AUTHORIZATION"]
            for role in ("operator", "viewer")}
    key_a = api_client_for(workspace)._credentials["HTTP_AUTHORIZATION"]
    with serving(main_application) as main, serving(own_port_app(workspace_slug=other_workspace.slug, token="")) as own_b, \
            serving(own_port_app(workspace_slug=workspace.slug, token="")) as own_a:
        yield type("Tenants", (), {"a": workspace, "b": other_workspace, "wire_a": wire_a, "wire_b": wire_b,
                                   "main": f"{main}/v1/festinger/proxy", "own_a": own_a, "own_b": own_b,
                                   "key_a": key_a, "key_b": keys["operator"], "viewer_b": keys["viewer"]})
    for ws in (workspace, other_workspace):
        cache.forget(ws.pk)
    wire_a.stop()
    wire_b.stop()


def listed(base: str, headers: dict) -> tuple[set, set]:
    tags = {m["name"] for m in httpx.get(f"{base}/api/tags", headers=headers).json()["models"]}
    models = {m["id"] for m in httpx.get(f"{base}/v1/models", headers=headers).json()["data"]}
    return tags, models


def test_each_workspace_lists_only_its_own_models_on_both_ports(tenants):
    for base, headers in ((tenants.main, {"Authorization": tenants.key_a}), (tenants.own_a, {})):
        tags, models = listed(base, headers)
        assert "alpha-model" in tags and "alpha-model" in models
        assert "beta-model" not in tags | models
    for base, headers in ((tenants.main, {"Authorization": tenants.key_b}), (tenants.own_b, {})):
        tags, models = listed(base, headers)
        assert "beta-model" in tags and "beta-model" in models
        assert "alpha-model" not in tags | models


def test_b_calling_as_model_by_name_is_a_404_on_every_route_and_as_upstream_hears_nothing(tenants):
    for base, headers in ((tenants.main, {"Authorization": tenants.key_b}), (tenants.own_b, {})):
        for path, body in CALLS + LOOKUPS:
            answer = httpx.post(f"{base}{path}", json={**body, "model": "alpha-model"}, headers=headers)
            assert answer.status_code == 404, (base, path, answer.text)
            assert "alpha-model" in answer.text  # the client's own name, said back; nothing of A's
    assert tenants.wire_a.requests == []

    tenants.wire_b.answer("beta answers")
    own = httpx.post(f"{tenants.main}/v1/chat/completions", headers={"Authorization": tenants.key_b},
                     json={"model": "beta-model", "messages": [{"role": "user", "content": "hi"}]})
    assert own.status_code == 200 and own.json()["choices"][0]["message"]["content"] == "beta answers"
    assert tenants.wire_b.requests[0][2]["authorization"] == "Bearer sk-beta-model-key"


def test_a_deployment_model_reaches_only_the_workspaces_it_is_shared_with_and_its_key_stays_hidden(tenants):
    shared = model_create(workspace=None, name="house-shared", provider="openai-compatible", model="m",
                          base_url=f"{tenants.wire_a.url}/v1", api_key="sk-shared-secret-9999")
    model_share(model=shared, workspaces=[tenants.b])

    assert "house-shared" in listed(tenants.main, {"Authorization": tenants.key_b})[0]
    assert "house-shared" not in listed(tenants.main, {"Authorization": tenants.key_a})[0]
    denied = httpx.post(f"{tenants.main}/api/chat", headers={"Authorization": tenants.key_a},
                        json={"model": "house-shared", "messages": [{"role": "user", "content": "hi"}], "stream": False})
    assert denied.status_code == 404 and tenants.wire_a.requests == []
    shown = httpx.post(f"{tenants.main}/api/show", headers={"Authorization": tenants.key_b}, json={"model": "house-shared"})
    assert shown.status_code == 200 and "9999" not in shown.text and "sk-shared" not in shown.text


def test_a_viewer_key_gets_403_from_every_route_that_calls_a_model_and_reads_the_rest(tenants):
    viewer = {"Authorization": tenants.viewer_b}
    assert {path for path, _ in CALLS} == MODEL_CALLING_PATHS
    for path, body in CALLS:
        answer = httpx.post(f"{tenants.main}{path}", json={**body, "model": "beta-model"}, headers=viewer)
        assert answer.status_code == 403, (path, answer.text)
        assert "viewer" in answer.text
    assert tenants.wire_b.requests == []
    assert "beta-model" in listed(tenants.main, viewer)[0]
    assert httpx.post(f"{tenants.main}/api/show", json={"model": "beta-model"}, headers=viewer).status_code == 200


def test_a_tenants_model_never_sends_the_deployments_key(tenants, settings):
    with pytest.raises(ApplicationError, match="FATHOM_MODEL_BASE_URLS"):
        model_create(workspace=tenants.b, name="leaky", provider="openai", model="gpt-4o-mini",
                     base_url="http://collector.example.net/v1")
    settings.FATHOM_MODEL_ALLOW_LOOPBACK = False
    with pytest.raises(ApplicationError, match="FATHOM_MODEL_ALLOW_LOOPBACK"):
        model_create(workspace=tenants.b, name="leaky", provider="openai", model="gpt-4o-mini",
                     base_url=f"{tenants.wire_b.url}/v1")
    settings.FATHOM_MODEL_ALLOW_LOOPBACK = True
    # allowed to point at the fake provider, with a blank key: refused (openai), or called keyless
    model_create(workspace=tenants.b, name="blank-openai", provider="openai", model="gpt-4o-mini",
                 base_url=f"{tenants.wire_b.url}/v1")
    model_create(workspace=tenants.b, name="blank-local", provider="openai-compatible", model="m",
                 base_url=f"{tenants.wire_b.url}/v1")
    tenants.wire_b.answer("keyless")
    headers = {"Authorization": tenants.key_b}
    message = [{"role": "user", "content": "hi"}]

    refused = httpx.post(f"{tenants.main}/v1/chat/completions", headers=headers,
                         json={"model": "blank-openai", "messages": message})
    called = httpx.post(f"{tenants.main}/v1/chat/completions", headers=headers,
                        json={"model": "blank-local", "messages": message})
    by_spec = httpx.post(f"{tenants.main}/v1/chat/completions", headers=headers,
                         json={"model": "openai:gpt-4o-mini", "messages": message})

    assert refused.status_code >= 400 and "no API key" in refused.text
    assert by_spec.status_code >= 400 and "no API key" in by_spec.text
    assert called.status_code == 200
    assert len(tenants.wire_b.requests) == 1
    assert all(ENV_KEY not in str(headers) for _, _, headers, _ in tenants.wire_b.requests + tenants.wire_a.requests)

