"""The app's relations to tables of apps whose state is created after its own (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('conductor', '0001_initial'),
        ('fathom', '0008_traceevent_ws_recollections'),
        ('fires', '0001_initial'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AddField(
                model_name='capabilitycall',
                name='fire',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='fires.fire'),
            ),
            migrations.AddField(
                model_name='capabilitycall',
                name='item',
                field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='call', to='conductor.agendaitem'),
            ),
            migrations.AddField(
                model_name='capabilitycall',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='conductorsettings',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='decision',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='run',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='decision',
                name='run',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='conductor.run'),
            ),
            migrations.AddField(
                model_name='capabilitycall',
                name='run',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='calls', to='conductor.run'),
            ),
            migrations.AddField(
                model_name='agendaitem',
                name='run',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='agenda', to='conductor.run'),
            ),
            migrations.AddField(
                model_name='runevent',
                name='run',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='conductor.run'),
            ),
            migrations.AddField(
                model_name='runevent',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddConstraint(
                model_name='conductorsettings',
                constraint=models.UniqueConstraint(fields=('workspace',), name='conductorsettings_one_per_workspace'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(fields=['workspace', '-created_at'], name='run_ws_created'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(condition=models.Q(('status__in', ['accepted', 'running'])), fields=['status'], name='run_live'),
            ),
            migrations.AddConstraint(
                model_name='decision',
                constraint=models.UniqueConstraint(fields=('run', 'number'), name='decision_unique_number'),
            ),
            migrations.AddConstraint(
                model_name='agendaitem',
                constraint=models.UniqueConstraint(fields=('run', 'number'), name='agendaitem_unique_number'),
            ),
            migrations.AddConstraint(
                model_name='runevent',
                constraint=models.UniqueConstraint(fields=('run', 'seq'), name='runevent_unique_seq'),
            ),
        ], database_operations=[]),
    ]
