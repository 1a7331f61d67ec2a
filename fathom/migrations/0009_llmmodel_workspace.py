"""Models belong to a workspace. Today's rows are assigned: a model whose roles are all in one
workspace becomes that workspace's (and is called with its own key or none); a model used by several
workspaces, by a deployment default or by none stays deployment-wide for the operator to decide: it
keeps the environment's key it used until now, and is shared with exactly the workspaces whose roles
use it, so nothing stops answering. Both kinds are printed, one line a model."""

import sys

import django.db.models.deletion
from django.db import migrations, models


def assign_rows(apps, schema_editor):
    LLMModel = apps.get_model("fathom", "LLMModel")
    ModelAssignment = apps.get_model("fathom", "ModelAssignment")
    for row in LLMModel.objects.order_by("name"):
        uses = set(ModelAssignment.objects.filter(model=row).values_list("workspace_id", flat=True))
        workspaces = sorted(w for w in uses if w is not None)
        if len(workspaces) == 1 and None not in uses:
            row.workspace_id = workspaces[0]
            row.save(update_fields=["workspace"])
            if not row.api_key_encrypted and row.provider in ("openai", "anthropic"):
                _report(f"model {row.name!r}: now workspace {workspaces[0]}'s; its key is blank, so it is called "
                        "without the environment's key (make it deployment-wide and shared to keep that key)")
            continue
        row.uses_deployment_key = True
        row.save(update_fields=["uses_deployment_key"])
        row.shared_with.set(workspaces)
        why = "used by no role" if not uses else ("a deployment default" if None in uses
                                                  else f"used by {len(workspaces)} workspaces")
        _report(f"model {row.name!r}: left deployment-wide ({why}), shared with workspaces {workspaces or 'none'}; "
                "an operator decides whom it belongs to")


def _report(line: str) -> None:
    sys.stdout.write(f"\n  fathom.0009: {line}")


class Migration(migrations.Migration):

    dependencies = [
        ('fathom', '0008_traceevent_ws_recollections'),
    ]

    operations = [
        migrations.AddField(
            model_name='llmmodel',
            name='shared_with',
            field=models.ManyToManyField(blank=True, help_text='deployment-wide models only: the workspaces that may use it', related_name='shared_llm_models', to='fathom.workspace'),
        ),
        migrations.AddField(
            model_name='llmmodel',
            name='uses_deployment_key',
            field=models.BooleanField(default=False, help_text="deployment-wide models only: with a blank key, use the provider's key from the server's environment"),
        ),
        migrations.AddField(
            model_name='llmmodel',
            name='workspace',
            field=models.ForeignKey(blank=True, help_text='blank: deployment-wide (superusers only)', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='llm_models', to='fathom.workspace'),
        ),
        migrations.AlterField(
            model_name='llmmodel',
            name='name',
            field=models.SlugField(help_text='how roles and the CLI refer to it', max_length=100),
        ),
        migrations.AddConstraint(
            model_name='llmmodel',
            constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='llmmodel_unique_workspace_name'),
        ),
        migrations.AddConstraint(
            model_name='llmmodel',
            constraint=models.UniqueConstraint(condition=models.Q(('workspace', None)), fields=('name',), name='llmmodel_unique_deployment_name'),
        ),
        migrations.RunPython(assign_rows, migrations.RunPython.noop),
    ]
