"""The app's tables as they were in the harness app (state only: no table is created or copied)."""

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('harness', '0010_autonomy_sit_state'),
        ('fathom', '0008_traceevent_ws_recollections'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='CapabilityCall',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('runner', models.CharField(blank=True, default='', max_length=200)),
                    ('runner_heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('worker', models.CharField(help_text='the worker kind: researcher or terminal', max_length=32)),
                    ('call_id', models.CharField(max_length=64, unique=True)),
                    ('status', models.CharField(choices=[('dispatched', 'Dispatched'), ('running', 'Running'), ('finished', 'Finished'), ('failed', 'Failed')], default='dispatched', max_length=16)),
                    ('task_id', models.CharField(blank=True, help_text='the Celery task that carries it', max_length=64)),
                    ('attempts', models.PositiveSmallIntegerField(default=0, help_text='how many times a worker took it up')),
                    ('journal', models.JSONField(blank=True, default=list, help_text="a terminal worker's steps, committed one by one")),
                    ('result', models.TextField(blank=True)),
                    ('error', models.TextField(blank=True)),
                    ('model_calls', models.PositiveIntegerField(default=0)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                ],
                options={
                    'db_table': 'harness_capabilitycall',
                    'ordering': ['run', 'created_at'],
                },
            ),
            migrations.CreateModel(
                name='ConductorSettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('terminal_enabled', models.BooleanField(default=False, help_text="offer the terminal worker (shell commands inside the workspace's file root)")),
                    ('terminal_timeout_seconds', models.PositiveIntegerField(default=30, help_text='wall-clock limit of one command')),
                    ('terminal_cpu_seconds', models.PositiveIntegerField(default=20, help_text='CPU-time limit of one command')),
                    ('terminal_memory_mb', models.PositiveIntegerField(default=512, help_text='address-space limit of one command')),
                    ('terminal_file_mb', models.PositiveIntegerField(default=64, help_text='largest file one command may write')),
                    ('terminal_output_chars', models.PositiveIntegerField(default=8000, help_text='output kept of one command')),
                    ('max_steps', models.PositiveSmallIntegerField(default=8, help_text="the most model turns one terminal worker takes (a researcher is bounded by the harness's max turns per fire)")),
                    ('max_decisions', models.PositiveSmallIntegerField(default=6, help_text='the most decision calls one run makes; past it the run is blocked')),
                ],
                options={
                    'verbose_name': 'conductor settings',
                    'verbose_name_plural': 'conductor settings',
                    'db_table': 'harness_conductorsettings',
                },
            ),
            migrations.CreateModel(
                name='Decision',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('number', models.PositiveSmallIntegerField(help_text='0 for the bootstrap, then 1, 2, 3...')),
                    ('kind', models.CharField(choices=[('bootstrap', 'Bootstrap'), ('decide', 'Decide')], max_length=16)),
                    ('action', models.CharField(blank=True, choices=[('SpawnWorker', 'Spawn Worker'), ('AwaitWorker', 'Await Worker'), ('MergeCanon', 'Merge Canon'), ('Complete', 'Complete'), ('Block', 'Block')], max_length=16)),
                    ('reason', models.TextField(blank=True)),
                    ('payload', models.JSONField(blank=True, default=dict)),
                    ('error', models.TextField(blank=True, help_text='the typed error of output the policy could not use')),
                    ('state_summary', models.TextField(blank=True, help_text='the runtime state the prompt carried')),
                    ('llm_call_id', models.CharField(blank=True, max_length=64)),
                ],
                options={
                    'db_table': 'harness_decision',
                    'ordering': ['run', 'number'],
                },
            ),
            migrations.CreateModel(
                name='Run',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('runner', models.CharField(blank=True, default='', max_length=200)),
                    ('runner_heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('objective', models.TextField()),
                    ('status', models.CharField(choices=[('accepted', 'Accepted'), ('running', 'Running'), ('completed', 'Completed'), ('blocked', 'Blocked'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='accepted', max_length=16)),
                    ('capabilities', models.JSONField(blank=True, default=list, help_text='the capabilities offered to this run')),
                    ('canon', models.JSONField(blank=True, default=list, help_text='[{item, capability, result}]: merged results')),
                    ('answer', models.TextField(blank=True, help_text='what Complete said, or why the run blocked or failed')),
                    ('bootstrapped_at', models.DateTimeField(blank=True, null=True)),
                    ('decisions_made', models.PositiveSmallIntegerField(default=0)),
                    ('last_event_seq', models.PositiveBigIntegerField(default=0)),
                    ('trace_id', models.CharField(blank=True, max_length=32)),
                    ('root_span_id', models.CharField(blank=True, max_length=16)),
                    ('cancel_requested_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                ],
                options={
                    'db_table': 'harness_run',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='RunEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('seq', models.PositiveBigIntegerField()),
                    ('kind', models.CharField(choices=[('RunAccepted', 'Run Accepted'), ('AgendaSet', 'Agenda Set'), ('CapabilityCallDispatched', 'Call Dispatched'), ('CapabilityCallFinished', 'Call Finished'), ('DecisionMade', 'Decision Made'), ('RunFinished', 'Run Finished')], max_length=32)),
                    ('data', models.JSONField(blank=True, default=dict)),
                ],
                options={
                    'db_table': 'harness_runevent',
                    'ordering': ['run', 'seq'],
                },
            ),
            migrations.CreateModel(
                name='AgendaItem',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('number', models.PositiveSmallIntegerField(help_text='1, 2, 3... within the run')),
                    ('capability', models.CharField(max_length=32)),
                    ('input', models.JSONField(blank=True, default=dict, help_text='{task, command?}')),
                    ('depends_on', models.JSONField(blank=True, default=list, help_text='numbers of the items this one waits for')),
                    ('state', models.CharField(choices=[('waiting', 'Waiting'), ('ready', 'Ready'), ('in_flight', 'In Flight'), ('done', 'Done'), ('failed', 'Failed')], default='ready', max_length=16)),
                    ('source', models.CharField(help_text='bootstrap, or decision:<number>', max_length=32)),
                    ('result', models.TextField(blank=True)),
                    ('merged', models.BooleanField(default=False, help_text="its result is in the run's canon")),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_agendaitem',
                    'ordering': ['run', 'number'],
                },
            ),
        ], database_operations=[]),
    ]
