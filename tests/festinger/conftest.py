"""Fixtures of the proxy's tests: a fake Ollama upstream, and the proxy's own port in front of it."""

import pytest

from festinger import cache
from festinger.proxy.serve import own_port_app
from festinger.services import world_ensure
from tests.festinger.proxy_support import FakeOllama, serving


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
