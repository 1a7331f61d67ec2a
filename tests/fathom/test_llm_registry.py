"""The model registry: keys encrypted at rest and never shown, the deployment's key only where a superuser
said so, admin."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from fathom.errors import ApplicationError
from fathom.llm.models import LLMModel
from fathom.llm.registry import ollama_base, ollama_base_url, resolve
from fathom.llm.services import model_assign, model_create, model_share, model_update

SECRET = "sk-test-9f8e7d6c5b4a39281706abcdWXYZ"


def test_the_api_key_is_encrypted_in_the_column_and_reads_back(workspace):
    row = model_create(workspace=workspace, name="gpt", provider="openai", model="gpt-4o-mini", api_key=SECRET)

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM fathom_llmmodel WHERE id = %s", [row.pk])
        stored = " ".join(str(value) for value in cursor.fetchone())
    assert SECRET not in stored and SECRET[:12] not in stored
    assert LLMModel.objects.get(pk=row.pk).get_api_key() == SECRET
    assert row.api_key_hint == "…WXYZ"
    model_assign(workspace=workspace, role="main", model=row)
    resolved = resolve(workspace=workspace, role="main")
    assert resolved.api_key == SECRET and SECRET not in repr(resolved)


@pytest.mark.parametrize(("host", "base"), [
    ("", ""),
    ("gpu-box:11434", "http://gpu-box:11434"),
    ("https://ollama.example.com:8443", "https://ollama.example.com:8443"),
    ("0.0.0.0:11434", "http://127.0.0.1:11434"),
    ("http://0.0.0.0:11434/", "http://127.0.0.1:11434"),
    ("[::]:11434", "http://127.0.0.1:11434"),
    ("0.0.0.0.example.com:11434", "http://0.0.0.0.example.com:11434"),
    ("http://gpu-box:11434/", "http://gpu-box:11434"),
    ("0.0.0.0", "http://127.0.0.1:11434"),  # no port: Ollama's, as Ollama reads it
    ("[::]", "http://127.0.0.1:11434"),
    (" gpu-box ", "http://gpu-box:11434"),
    ("http://gpu-box", "http://gpu-box"),  # a scheme without a port: its own (80)
    ("https://ollama.example.com/base/", "https://ollama.example.com/base"),
])
def test_ollama_host_is_read_one_way_for_the_registry_and_the_proxy(settings, host, base):
    settings.OLLAMA_HOST = host
    assert ollama_base() == base
    assert ollama_base_url() == (base or "http://127.0.0.1:11434") + "/v1"


def test_an_ollama_host_whose_port_is_not_a_number_is_refused_with_its_reason(settings):
    settings.OLLAMA_HOST = "gpu-box:abc"
    with pytest.raises(ImproperlyConfigured, match="OLLAMA_HOST='gpu-box:abc'"):
        ollama_base()


def test_a_blank_key_is_the_environments_only_for_a_deployment_model_set_to_use_it(workspace, settings):
    settings.OPENAI_API_KEY = "sk-from-env"
    settings.OLLAMA_HOST = "gpu-box:11434"
    deployment = model_create(workspace=None, name="gpt", provider="openai", model="gpt-4o-mini",
                              uses_deployment_key=True)
    model_share(model=deployment, workspaces=[workspace])
    own = model_create(workspace=workspace, name="own-gpt", provider="openai", model="gpt-4o-mini")
    local = model_create(workspace=workspace, name="llama", provider="openai-compatible", model="llama3.2")
    model_assign(workspace=workspace, role="main", model=deployment)
    model_assign(workspace=workspace, role="writer", model=own)
    model_assign(workspace=workspace, role="focus", model=local)

    assert resolve(workspace=workspace, role="main").api_key == "sk-from-env"
    assert resolve(workspace=workspace, role="writer").api_key == ""
    assert resolve(workspace=workspace, role="focus").base_url == "http://gpu-box:11434/v1"


def test_a_workspaces_model_may_not_use_the_deployments_key(workspace):
    with pytest.raises(ApplicationError, match="deployment's key"):
        model_create(workspace=workspace, name="gpt", provider="openai", model="gpt-4o-mini", uses_deployment_key=True)


def test_the_environment_default_model_answers_roles_nobody_assigned(workspace, settings):
    settings.FATHOM_DEFAULT_MODEL = "anthropic:claude-sonnet-4-5"
    settings.ANTHROPIC_API_KEY = "sk-ant-env"

    resolved = resolve(workspace=workspace, role="writer")

    assert (resolved.provider, resolved.model, resolved.api_key) == ("anthropic", "claude-sonnet-4-5", "sk-ant-env")


def test_replacing_and_removing_a_key(workspace):
    row = model_create(workspace=workspace, name="gpt", provider="openai", model="gpt-4o-mini", api_key=SECRET)
    model_update(model=row, api_key="sk-new-1234")
    assert LLMModel.objects.get(pk=row.pk).get_api_key() == "sk-new-1234"
    model_update(model=row, api_key="")
    assert LLMModel.objects.get(pk=row.pk).api_key_encrypted == "" and row.api_key_hint == ""


@pytest.fixture
def admin_client_logged_in(client, django_user_model):
    user = django_user_model.objects.create_superuser("root@example.com", "root@example.com", "pw-12345678")
    client.force_login(user)
    return client


def test_the_admin_shows_only_the_last_four_characters_and_keeps_the_key_when_left_blank(admin_client_logged_in,
                                                                                          workspace):
    row = model_create(workspace=workspace, name="gpt", provider="openai", model="gpt-4o-mini", api_key=SECRET)

    listing = admin_client_logged_in.get("/admin/fathom/llmmodel/").content.decode()
    page = admin_client_logged_in.get(f"/admin/fathom/llmmodel/{row.pk}/change/").content.decode()
    assert "…WXYZ" in listing and SECRET not in listing and SECRET not in page
    assert row.api_key_encrypted not in page

    form = {"workspace": workspace.pk, "name": "gpt", "provider": "openai", "model": "gpt-4o", "api": "chat_completions",
            "base_url": "", "input_price_per_mtok": "2.5",
            "output_price_per_mtok": "10", "cached_input_price_per_mtok": "", "context_window": "128000",
            "max_output_tokens": "4096", "timeout_seconds": "60", "options": "{}", "api_key": "",
            "assignments-TOTAL_FORMS": "0", "assignments-INITIAL_FORMS": "0"}
    response = admin_client_logged_in.post(f"/admin/fathom/llmmodel/{row.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    row.refresh_from_db()
    assert row.model == "gpt-4o" and row.get_api_key() == SECRET

    response = admin_client_logged_in.post(f"/admin/fathom/llmmodel/{row.pk}/change/", {**form, "api_key": "sk-rotated-7777"})
    row.refresh_from_db()
    assert row.get_api_key() == "sk-rotated-7777" and row.api_key_last4 == "7777"
