"""fathom 0009: today's registry rows go to the workspace whose roles use them; rows used by several
workspaces, by a deployment default or by none stay deployment-wide, shared with exactly the
workspaces that used them, keep the environment's key they used, and are reported."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from fathom.llm.models import LLMModel

BEFORE = ("fathom", "0008_traceevent_ws_recollections")
AFTER = ("fathom", "0009_llmmodel_workspace")

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_todays_rows_go_to_the_workspace_using_them_and_the_rest_stay_for_the_operator(
        workspace, other_workspace, capsys):
    # given the registry as it was: models without a workspace, roles in two workspaces and a default
    executor = _migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    model, assignment = old.get_model("fathom", "LLMModel"), old.get_model("fathom", "ModelAssignment")
    rows = {name: model.objects.create(name=name, provider="openai", model="gpt-4o-mini")
            for name in ("onboarded", "both", "default", "idle")}
    assignment.objects.create(workspace_id=workspace.pk, role="main", model=rows["onboarded"])
    assignment.objects.create(workspace_id=workspace.pk, role="verifier", model=rows["onboarded"])
    assignment.objects.create(workspace_id=workspace.pk, role="writer", model=rows["both"])
    assignment.objects.create(workspace_id=other_workspace.pk, role="writer", model=rows["both"])
    assignment.objects.create(workspace_id=None, role="main", model=rows["default"])
    capsys.readouterr()

    # when it migrates forward
    _migrate(executor.loader.graph.leaf_nodes())

    # then the one-workspace row is that workspace's, without the deployment's key
    migrated = {row.name: row for row in LLMModel.objects.all()}
    assert (migrated["onboarded"].workspace_id, migrated["onboarded"].uses_deployment_key) == (workspace.pk, False)
    # and the others stay deployment-wide, shared with exactly the workspaces that used them, and reported
    for name, shared in (("both", {workspace.pk, other_workspace.pk}), ("default", set()), ("idle", set())):
        row = migrated[name]
        assert row.workspace_id is None and row.uses_deployment_key
        assert set(row.shared_with.values_list("pk", flat=True)) == shared, name
    report = capsys.readouterr().out
    assert "model 'onboarded': now workspace" in report and "without the environment's key" in report
    assert "model 'both': left deployment-wide (used by 2 workspaces)" in report
    assert "model 'default': left deployment-wide (a deployment default)" in report
    assert "model 'idle': left deployment-wide (used by no role)" in report


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets))
    executor.loader.build_graph()
    return executor
