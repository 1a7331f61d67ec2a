"""The app's relations to tables of apps whose state is created after its own (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('fathom', '0008_traceevent_ws_recollections'),
        ('fires', '0001_initial'),
        ('runtime', '0001_initial'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AddField(
                model_name='fire',
                name='session',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='fires', to='runtime.session'),
            ),
            migrations.AddField(
                model_name='fire',
                name='turn',
                field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='fire', to='runtime.turn'),
            ),
            migrations.AddField(
                model_name='fire',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='firetoolcall',
                name='fire',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tool_calls', to='fires.fire'),
            ),
            migrations.AddField(
                model_name='firetoolcall',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='fireturn',
                name='fire',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='turns', to='fires.fire'),
            ),
            migrations.AddField(
                model_name='fireturn',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='firetoolcall',
                name='turn',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='calls', to='fires.fireturn'),
            ),
            migrations.AddIndex(
                model_name='fire',
                index=models.Index(fields=['workspace', '-created_at'], name='fire_ws_created'),
            ),
            migrations.AddIndex(
                model_name='fire',
                index=models.Index(condition=models.Q(('status__in', ['accepted', 'running'])), fields=['status'], name='fire_status'),
            ),
            migrations.AddConstraint(
                model_name='fire',
                constraint=models.UniqueConstraint(condition=models.Q(('spawned_by', ''), _negated=True), fields=('spawned_by',), name='fire_unique_spawned_by'),
            ),
            migrations.AddConstraint(
                model_name='fireturn',
                constraint=models.UniqueConstraint(fields=('fire', 'number'), name='fireturn_unique_number'),
            ),
            migrations.AddConstraint(
                model_name='firetoolcall',
                constraint=models.UniqueConstraint(fields=('turn', 'call_id'), name='firetoolcall_unique_call'),
            ),
        ], database_operations=[]),
    ]
