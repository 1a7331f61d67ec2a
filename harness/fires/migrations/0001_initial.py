"""The app's tables as they were in the harness app (state only: no table is created or copied)."""

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('harness', '0010_autonomy_sit_state'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='FireToolCall',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('call_id', models.CharField(max_length=200)),
                    ('position', models.PositiveSmallIntegerField(default=0)),
                    ('name', models.CharField(max_length=64)),
                    ('arguments', models.JSONField(blank=True, default=dict)),
                    ('plan_step', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('result', models.TextField(blank=True)),
                    ('ok', models.BooleanField(default=True)),
                    ('latency_ms', models.FloatField(default=0)),
                ],
                options={
                    'db_table': 'harness_firetoolcall',
                    'ordering': ['turn', 'position'],
                },
            ),
            migrations.CreateModel(
                name='FireTurn',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('number', models.PositiveSmallIntegerField()),
                    ('phase', models.CharField(choices=[('main', 'Main'), ('verify', 'Verify'), ('writes', 'Writes'), ('review', 'Review'), ('done', 'Done')], default='main', max_length=16)),
                    ('text', models.TextField(blank=True)),
                    ('tool_calls', models.JSONField(blank=True, default=list, help_text='[{id, name, arguments}] as the model asked')),
                    ('forced', models.BooleanField(default=False, help_text="the turn cap's forced final respond")),
                    ('stop_reason', models.CharField(blank=True, max_length=32)),
                    ('model', models.CharField(blank=True, max_length=200)),
                    ('provider', models.CharField(blank=True, max_length=64)),
                    ('input_tokens', models.PositiveIntegerField(default=0)),
                    ('output_tokens', models.PositiveIntegerField(default=0)),
                    ('cost', models.DecimalField(decimal_places=6, default=0, max_digits=12)),
                    ('latency_ms', models.FloatField(default=0)),
                    ('call_id', models.CharField(blank=True, max_length=64)),
                ],
                options={
                    'db_table': 'harness_fireturn',
                    'ordering': ['fire', 'number'],
                },
            ),
            migrations.CreateModel(
                name='Fire',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('runner', models.CharField(blank=True, default='', max_length=200)),
                    ('runner_heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('mode', models.CharField(choices=[('reactive', 'Reactive'), ('self_directing', 'Self Directing'), ('introspective', 'Introspective')], default='reactive', max_length=20)),
                    ('status', models.CharField(choices=[('accepted', 'Accepted'), ('running', 'Running'), ('finished', 'Finished'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='accepted', max_length=16)),
                    ('phase', models.CharField(choices=[('main', 'Main'), ('verify', 'Verify'), ('writes', 'Writes'), ('review', 'Review'), ('done', 'Done')], default='main', max_length=16)),
                    ('stop_reason', models.CharField(blank=True, choices=[('responded', 'Responded'), ('max_turns', 'Max Turns'), ('error', 'Error'), ('cancelled', 'Cancelled'), ('budget_exceeded', 'Budget Exceeded')], max_length=16)),
                    ('depth', models.PositiveSmallIntegerField(default=0)),
                    ('spawned_by', models.CharField(blank=True, default='', max_length=200)),
                    ('question', models.TextField(blank=True, help_text='what the fire answers, for lists and the Q/A marker')),
                    ('work_set', models.JSONField(blank=True, default=dict, help_text='{messages: [{id, content, ...}], pending: [ids]}: what the fire works on')),
                    ('disabled_tools', models.JSONField(blank=True, default=list)),
                    ('plan', models.JSONField(blank=True, default=list, help_text='[{step, text, status}]: the active plan')),
                    ('plan_events', models.JSONField(blank=True, default=list, help_text='drifts from the plan and its revisions (harness.fires.tools.plan)')),
                    ('response', models.JSONField(blank=True, default=dict, help_text="the respond tool's arguments")),
                    ('review', models.JSONField(blank=True, default=dict, help_text="the review pass's outcome")),
                    ('writes', models.JSONField(blank=True, default=dict, help_text='ids of the per-fire writes')),
                    ('writes_done_at', models.DateTimeField(blank=True, null=True)),
                    ('cancel_requested_at', models.DateTimeField(blank=True, null=True)),
                    ('model_calls', models.PositiveIntegerField(default=0)),
                    ('input_tokens', models.PositiveBigIntegerField(default=0)),
                    ('output_tokens', models.PositiveBigIntegerField(default=0)),
                    ('cost', models.DecimalField(decimal_places=6, default=0, max_digits=12)),
                    ('trace_id', models.CharField(blank=True, max_length=64)),
                    ('error', models.TextField(blank=True)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='fires.fire')),
                ],
                options={
                    'db_table': 'harness_fire',
                    'ordering': ['-created_at'],
                },
            ),
        ], database_operations=[]),
    ]
