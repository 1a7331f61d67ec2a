"""Festinger's test fixtures: a world model, seed Test B's queued conflict, and for the proxy's tests a
fake Ollama upstream and the proxy's own port in front of it."""

import pytest

from fathom.asgi import application as main_application
from festinger import cache
from festinger.proxy.serve import own_port_app
from festinger.services import insert_fact, world_ensure
from tests.festinger.proxy_support import FakeOllama, serving


@pytest.fixture
def world(workspace):
    """`workspace` with its world model, forgotten by this process's cache afterwards."""
    world_ensure(workspace=workspace)
    yield workspace
    cache.forget(workspace.pk)


def isa_isa_conflict(workspace):
    """Seed Test B's end: gnommoweb ISA repo in `type`, and the ISA+ISA collision with `container`
    queued (the Conflict returned)."""
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="cloud_llm")
    return insert_fact(workspace=workspace, concept="gnommoweb", parent="container", dimension="type",
                       is_isa=True, confidence=0.8, source="inferred")


@pytest.fixture
def fake_ollama():
    fake = FakeOllama()
    yield fake
    fake.close()


@pytest.fixture
def proxy(transactional_db, workspace, settings, fake_ollama):
    """The proxy of `workspace` in front of the fake Ollama; yields its base URL."""
    settings.OLLAMA_HOST = fake_ollama.url
    world_ensure(workspace=workspace)
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        yield url
    cache.forget(workspace.pk)


@pytest.fixture
def offline_proxy(transactional_db, workspace, settings):
    """The proxy with no Ollama configured: only the registry's models."""
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        yield url
    cache.forget(workspace.pk)


@pytest.fixture
def main_port(transactional_db, settings, fake_ollama):
    """The main port's ASGI app (Django and the proxy's mount) in front of the fake Ollama; its base URL."""
    settings.OLLAMA_HOST = fake_ollama.url
    with serving(main_application) as url:
        yield url


@pytest.fixture
def keys(workspace, other_workspace, api_client_for) -> tuple[str, str]:
    """The Authorization headers of an API key of `workspace` and of one of `other_workspace`."""
    return tuple(api_client_for(ws)._credentials["HTTP_AUTHORIZATION"] for ws in (workspace, other_workspace))
