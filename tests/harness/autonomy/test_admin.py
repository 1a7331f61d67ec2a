"""Autonomy in the admin: the switch and the weights are edited there, validated like REST; the
decisions and samples are read there."""

from django.forms.models import model_to_dict
from django_celery_beat.models import PeriodicTask

from harness.autonomy.models import AutonomySettings
from harness.autonomy.services import autonomy_settings_get, autonomy_sweep


def form_of(settings, **changes) -> dict:
    data = {k: ("" if v is None else v) for k, v in model_to_dict(settings).items() if k != "id"}
    return {**data, **changes}


def test_the_operator_flips_the_switch_and_weights_in_admin(admin_client, workspace):
    settings = autonomy_settings_get(workspace=workspace)
    url = f"/admin/autonomy/autonomysettings/{settings.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert "Signal weights" in page and "unprovenanced" in page
    response = admin_client.post(url, form_of(settings, mode="on", weight_directives=0.5, cron="0 9 * * *"))
    assert response.status_code == 302, response.content.decode()[:2000]
    settings = AutonomySettings.objects.get(pk=settings.pk)
    assert (settings.mode, settings.weight_directives) == ("on", 0.5)
    assert PeriodicTask.objects.filter(name=f"autonomy:{workspace.slug}").exists()


def test_admin_refuses_what_rest_refuses(admin_client, workspace):
    settings = autonomy_settings_get(workspace=workspace)
    url = f"/admin/autonomy/autonomysettings/{settings.pk}/change/"
    for bad in ({"time_zone": "Mars/Olympus"}, {"quiet_start": "22:00"}, {"cron": "whenever"}):
        response = admin_client.post(url, form_of(settings, **bad))
        assert response.status_code == 200 and "errornote" in response.content.decode(), bad
    assert AutonomySettings.objects.get(pk=settings.pk).mode == "observe"


def test_decisions_and_samples_are_listed_read_only(admin_client, workspace):
    autonomy_sweep()
    decisions = admin_client.get("/admin/autonomy/autonomydecision/").content.decode()
    assert "below_threshold" in decisions or "would_sit" in decisions
    assert admin_client.get("/admin/autonomy/pressuresample/").status_code == 200
    assert admin_client.get("/admin/autonomy/autonomydecision/add/").status_code == 403
    assert admin_client.get("/admin/autonomy/producerrun/").status_code == 200
