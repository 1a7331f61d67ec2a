"""The app's relations to tables of apps whose state is created after its own (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('autonomy', '0001_initial'),
        ('fathom', '0008_traceevent_ws_recollections'),
        ('runtime', '0001_initial'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AddField(
                model_name='autonomydecision',
                name='session',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runtime.session'),
            ),
            migrations.AddField(
                model_name='autonomydecision',
                name='trigger',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runtime.trigger'),
            ),
            migrations.AddField(
                model_name='autonomydecision',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='autonomysettings',
                name='session',
                field=models.ForeignKey(blank=True, help_text='the autonomy session the Sits run in (made on first use)', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runtime.session'),
            ),
            migrations.AddField(
                model_name='autonomysettings',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='inboxmark',
                name='trigger',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runtime.trigger'),
            ),
            migrations.AddField(
                model_name='inboxmark',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='pressuresample',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddField(
                model_name='producerrun',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace'),
            ),
            migrations.AddIndex(
                model_name='autonomydecision',
                index=models.Index(fields=['workspace', '-created_at'], name='autonomydecision_ws_created'),
            ),
            migrations.AddIndex(
                model_name='autonomydecision',
                index=models.Index(condition=models.Q(('sit_state', 'claimed')), fields=['start_queued_at'], name='autonomydecision_sit_claimed'),
            ),
            migrations.AddConstraint(
                model_name='autonomydecision',
                constraint=models.UniqueConstraint(condition=models.Q(('action', 'sit')), fields=('workspace', 'window_start'), name='autonomydecision_one_sit_per_window'),
            ),
            migrations.AddConstraint(
                model_name='autonomysettings',
                constraint=models.UniqueConstraint(fields=('workspace',), name='autonomysettings_one_per_workspace'),
            ),
            migrations.AddConstraint(
                model_name='autonomysettings',
                constraint=models.CheckConstraint(condition=models.Q(('threshold__gte', 0), ('threshold__lte', 1)), name='autonomysettings_threshold_0_1'),
            ),
            migrations.AddConstraint(
                model_name='inboxmark',
                constraint=models.UniqueConstraint(fields=('workspace', 'delta_id'), name='inboxmark_one_per_delta'),
            ),
            migrations.AddIndex(
                model_name='pressuresample',
                index=models.Index(fields=['workspace', '-created_at'], name='pressuresample_ws_created'),
            ),
            migrations.AddIndex(
                model_name='producerrun',
                index=models.Index(fields=['workspace', '-created_at'], name='producerrun_ws_created'),
            ),
            migrations.AddConstraint(
                model_name='producerrun',
                constraint=models.UniqueConstraint(condition=models.Q(('origin', 'pressure')), fields=('workspace', 'producer', 'window_start'), name='producerrun_one_per_window'),
            ),
        ], database_operations=[]),
    ]
