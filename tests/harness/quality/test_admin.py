"""The quality harness's admin pages open, and a prompt edited there reaches the verifier."""

import pytest
from django.contrib.auth import get_user_model

from harness.fires.services import fire_create
from harness.quality.configuration import quality_settings_get
from harness.quality.models import QualityPrompt, QualityRun
from harness.quality.prompts import DEFAULTS, prompt_get

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    return client


@pytest.mark.parametrize("model", ["qualityrun", "feedback", "qualitysettings", "qualityretrypolicy", "qualityprompt"])
def test_each_quality_admin_page_opens(admin_client, model):
    assert admin_client.get(f"/admin/quality/{model}/").status_code == 200
    if model not in ("qualityrun", "feedback"):
        assert admin_client.get(f"/admin/quality/{model}/add/").status_code == 200


def test_a_quality_run_opens_with_its_attempts(admin_client, workspace):
    run = QualityRun.objects.create(workspace=workspace, fire=fire_create(workspace=workspace, mode="introspective",
                                                                         question="q"))
    assert admin_client.get(f"/admin/quality/qualityrun/{run.pk}/change/").status_code == 200


def test_a_prompt_saved_in_admin_overrides_the_default_and_deleting_it_restores_it(admin_client):
    response = admin_client.post("/admin/quality/qualityprompt/add/", {"prompt_id": "verifier_system",
                                                                        "text": "Be strict."})
    assert response.status_code == 302, response.content[:500]
    assert prompt_get("verifier_system") == "Be strict."
    QualityPrompt.objects.all().delete()
    assert prompt_get("verifier_system") == DEFAULTS["verifier_system"]


def test_contract_thresholds_edited_in_admin_are_checked(admin_client, workspace):
    settings = quality_settings_get(workspace_id=workspace.pk)
    url = f"/admin/quality/qualitysettings/{settings.pk}/change/"
    form = {"workspace": workspace.pk, "enabled": "on", "swarm_min_sources": 5, "swarm_specialists": "[]",
            "contracts": '{"chat": {"min_output_chars": "long"}}'}
    refused = admin_client.post(url, form)
    assert refused.status_code == 200 and "chat.min_output_chars: a whole number" in refused.content.decode()
    assert admin_client.post(url, {**form, "contracts": '{"chat": {"min_output_chars": 80}}'}).status_code == 302
    settings.refresh_from_db()
    assert settings.contracts == {"chat": {"min_output_chars": 80}}
