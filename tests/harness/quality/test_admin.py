"""The quality harness's admin pages open, and a prompt edited there reaches the verifier."""

import pytest
from django.contrib.auth import get_user_model

from harness.fires.services import fire_create
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
