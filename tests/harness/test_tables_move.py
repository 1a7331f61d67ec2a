"""The harness's tables moved to the harness apps without being copied (harness 0011 and each app's 0001):
a database migrated by the old main (one `harness` app, its migrations up to 0010) migrates forward with
every row intact, readable through the apps' models, and its content types relabelled."""

import uuid
from datetime import UTC, datetime, time
from decimal import Decimal
from importlib import import_module

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

MOVE = ("harness", "0011_tables_move_to_apps")
OLD_MAIN = ("harness", "0010_autonomy_sit_state")
NEW_APPS = ("runtime", "fires", "quality", "conductor", "autonomy")

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_database_migrated_by_the_old_main_migrates_forward_losing_nothing(workspace):
    # given a database at the old main's state (harness 0010, every other app at its latest), with a row
    # in every harness table written through the historical models
    executor = _migrate([OLD_MAIN, *((app, None) for app in NEW_APPS)])
    old_state = executor.loader.project_state(
        [node for node in executor.loader.graph.leaf_nodes() if node[0] not in (*NEW_APPS, "harness")] + [OLD_MAIN])
    old_models = [model for model in old_state.apps.get_models() if model._meta.app_label == "harness"]
    assert len(old_models) == 31
    rows = _rows_create(old_models, workspace_id=workspace.pk)
    written = {model._meta.model_name: list(model.objects.order_by("pk").values()) for model in old_models}
    assert all(len(values) == 1 for values in written.values())
    content_types = dict(ContentType.objects.filter(app_label="harness").values_list("model", "pk"))
    assert set(content_types) == set(written)  # the old main's content types, as its post_migrate made them

    # when it migrates forward
    executor = _migrate(executor.loader.graph.leaf_nodes())

    # then every row is there, read through the apps' own models
    new_app = import_module("harness.migrations." + MOVE[1]).NEW_APP
    assert set(new_app.values()) == set(NEW_APPS)
    for model_name, values in written.items():
        model = django_apps.get_model(new_app[model_name], model_name)
        assert model._meta.db_table == f"harness_{model_name}"
        # (fields added since, with their defaults, aside; and a claim's staleness, which runtime 0002
        # moved from the 300 s default to the heartbeat's 20 s)
        if model_name == "harnesssettings":
            values = [{**row, "stale_after_seconds": 20} for row in values]
        assert list(model.objects.order_by("pk").values(*values[0])) == values, model_name
        assert model.objects.get(pk=rows[model_name]).pk == rows[model_name]
    # and the content types (with the permissions and log entries pointing at them) follow the models
    assert not ContentType.objects.filter(app_label="harness").exists()
    assert {model: ContentType.objects.get(pk=pk).app_label for model, pk in content_types.items()} == new_app
    assert Permission.objects.get(codename="view_fire").content_type.app_label == "fires"


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets))
    executor.loader.build_graph()
    return executor


def _rows_create(models, *, workspace_id: int) -> dict[str, object]:
    """One row per model, its fields filled by type, its relations pointing at the rows made before it
    (a model is made once every model it points at is)."""
    made: dict[str, object] = {}
    pending = list(models)
    while pending:
        model = next(m for m in pending if all(
            f.related_model is m or f.related_model._meta.app_label != "harness"
            or f.related_model._meta.model_name in made for f in _relations(m)))
        pending.remove(model)
        name = model._meta.model_name
        values = {field.attname: _value(field, made, workspace_id) for field in model._meta.concrete_fields
                  if not field.auto_created and (field.is_relation or not field.has_default())}
        values.update(OVERRIDES.get(name, {}))
        made[name] = model.objects.create(**values).pk
    return made


# Rows the check constraints ask a shape of.
OVERRIDES = {
    "profilefieldversion": {"user_profile_id": None},  # exactly one of the two profiles
    "sessionschedule": {"kind": "heartbeat", "every_seconds": 60, "cron": ""},
}


def _relations(model):
    return [field for field in model._meta.concrete_fields if field.is_relation]


def _value(field, made, workspace_id):
    if field.is_relation:
        target = field.related_model._meta
        if target.label_lower == "fathom.workspace":
            return workspace_id
        if target.app_label == "harness" and target.model_name in made:
            return made[target.model_name]
        assert field.null, f"{field} needs a row of {target.label}"
        return None
    if field.choices:
        return field.choices[0][0]
    kind = field.get_internal_type()
    return {"CharField": "x", "TextField": "x", "SlugField": "x", "JSONField": {"k": 1}, "BooleanField": True,
            "FloatField": 0.5, "DecimalField": Decimal("0.5"), "DateTimeField": datetime(2026, 1, 2, tzinfo=UTC),
            "TimeField": time(8, 0), "UUIDField": uuid.uuid4()}.get(kind, 1)
