"""The app's tables as they were in the harness app (state only: no table is created or copied)."""

import django.db.models.deletion
import harness.runtime.models
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('harness', '0010_autonomy_sit_state'),
        ('django_celery_beat', '0019_alter_periodictasks_options'),
        ('fathom', '0008_traceevent_ws_recollections'),
        ('fires', '0001_initial'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='TaskSlots',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('scope', models.CharField(max_length=80, unique=True)),
                    ('running', models.PositiveIntegerField(default=0)),
                ],
                options={
                    'verbose_name_plural': 'task slots',
                    'db_table': 'harness_taskslots',
                },
            ),
            migrations.CreateModel(
                name='AgentProfile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('slug', models.SlugField(max_length=64)),
                    ('name', models.CharField(blank=True, max_length=200)),
                    ('agents_md', models.TextField(blank=True, help_text='AGENTS.md: how the agent works')),
                    ('soul_md', models.TextField(blank=True, help_text='SOUL.md: what it cares about')),
                    ('identity_md', models.TextField(blank=True, help_text='IDENTITY.md: who it is')),
                    ('memory', models.TextField(blank=True, help_text='long-term memory the agent carries into every session')),
                    ('version', models.PositiveIntegerField(default=1)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_agentprofile',
                    'ordering': ['slug'],
                },
            ),
            migrations.CreateModel(
                name='HarnessSettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('max_turns_per_fire', models.PositiveSmallIntegerField(default=12)),
                    ('sit_round_cap', models.PositiveSmallIntegerField(default=5)),
                    ('refire_cap', models.PositiveSmallIntegerField(default=2, help_text='how many more turns an unaddressed user message may fire before it is given up')),
                    ('refire_delay_seconds', models.PositiveIntegerField(default=2)),
                    ('stale_after_seconds', models.PositiveIntegerField(default=300, help_text='a claimed session or fire whose runner is silent this long is taken over')),
                    ('history_messages', models.PositiveSmallIntegerField(default=40, help_text='how many earlier conversation messages a fire sees uncompacted')),
                    ('task_capacity_workspace', models.PositiveSmallIntegerField(default=harness.runtime.models._task_capacity_workspace, help_text='background tasks running at once in the workspace; more wait, Pending, and start as running ones end')),
                    ('task_capacity_session', models.PositiveSmallIntegerField(default=harness.runtime.models._task_capacity_session, help_text='background tasks running at once in one session')),
                    ('task_timeout_seconds', models.PositiveIntegerField(default=300, help_text='a background task running longer than this fails (timed out)')),
                    ('task_max_attempts', models.PositiveSmallIntegerField(default=2, help_text='runs a background task gets when its worker dies under it; then it fails')),
                    ('stream_batch_ms', models.PositiveIntegerField(default=50, help_text="a session's fire sends the text it is writing as AgentStream events at most this often (milliseconds; the first at once)")),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'verbose_name': 'harness settings',
                    'verbose_name_plural': 'harness settings',
                    'db_table': 'harness_harnesssettings',
                },
            ),
            migrations.CreateModel(
                name='Session',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('runner', models.CharField(blank=True, default='', max_length=200)),
                    ('runner_heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('tag', models.CharField(db_index=True, help_text='the river: session:<...>', max_length=100)),
                    ('title', models.CharField(blank=True, max_length=200)),
                    ('status', models.CharField(choices=[('open', 'Open'), ('closed', 'Closed')], default='open', max_length=16)),
                    ('agent_profile_copy', models.JSONField(blank=True, default=dict)),
                    ('user_profile_copy', models.JSONField(blank=True, default=dict)),
                    ('profiles_copied_at', models.DateTimeField(blank=True, null=True)),
                    ('last_event_seq', models.PositiveBigIntegerField(default=0)),
                    ('turn_count', models.PositiveIntegerField(default=0)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('agent_profile', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='sessions', to='runtime.agentprofile')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_session',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='SessionSchedule',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('kind', models.CharField(choices=[('heartbeat', 'Heartbeat'), ('cron', 'Cron')], max_length=16)),
                    ('every_seconds', models.PositiveIntegerField(blank=True, help_text='heartbeat: the interval', null=True)),
                    ('cron', models.CharField(blank=True, help_text='cron: minute hour day-of-month month day-of-week', max_length=120)),
                    ('timezone', models.CharField(default='UTC', max_length=64)),
                    ('content', models.TextField(blank=True, help_text='what the trigger says to the agent (optional)')),
                    ('last_fired_at', models.DateTimeField(blank=True, null=True)),
                    ('periodic_task', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='django_celery_beat.periodictask')),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='schedules', to='runtime.session')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_sessionschedule',
                    'ordering': ['created_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='Task',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('runner', models.CharField(blank=True, default='', max_length=200)),
                    ('runner_heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('call_id', models.CharField(blank=True, help_text="the model's tool call this task runs", max_length=200)),
                    ('idempotency_key', models.CharField(help_text='fire:turn:call: a replayed tool call finds its task', max_length=300, unique=True)),
                    ('tool', models.CharField(max_length=64)),
                    ('arguments', models.JSONField(blank=True, default=dict)),
                    ('state', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('canceled', 'Canceled')], default='pending', max_length=16)),
                    ('result', models.TextField(blank=True)),
                    ('error', models.TextField(blank=True)),
                    ('attempts', models.PositiveSmallIntegerField(default=0, help_text='runs started on a worker')),
                    ('max_attempts', models.PositiveSmallIntegerField(default=2)),
                    ('timeout_seconds', models.PositiveIntegerField(default=300)),
                    ('cancel_requested_by', models.CharField(blank=True, max_length=200)),
                    ('started_at', models.DateTimeField(blank=True, help_text='when it took its capacity (Running)', null=True)),
                    ('picked_at', models.DateTimeField(blank=True, help_text='when a worker began its current run', null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('fire', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='tasks', to='fires.fire')),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tasks', to='runtime.session')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_task',
                    'ordering': ['created_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='Turn',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('number', models.PositiveIntegerField()),
                    ('status', models.CharField(choices=[('running', 'Running'), ('ended', 'Ended'), ('failed', 'Failed')], default='running', max_length=16)),
                    ('refired_ids', models.JSONField(blank=True, default=list)),
                    ('runner', models.CharField(blank=True, max_length=200)),
                    ('error', models.TextField(blank=True)),
                    ('ended_at', models.DateTimeField(blank=True, null=True)),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='turns', to='runtime.session')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_turn',
                    'ordering': ['session', 'number'],
                },
            ),
            migrations.CreateModel(
                name='Trigger',
                fields=[
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                    ('kind', models.CharField(choices=[('user_message', 'UserMessage'), ('task_done', 'TaskDone'), ('heartbeat', 'Heartbeat'), ('cron', 'Cron'), ('refresh_profile', 'RefreshProfile')], max_length=20)),
                    ('state', models.CharField(choices=[('queued', 'Queued'), ('snapshotted', 'Snapshotted'), ('consumed', 'Consumed')], default='queued', max_length=16)),
                    ('content', models.TextField(blank=True)),
                    ('payload', models.JSONField(blank=True, default=dict)),
                    ('source', models.CharField(default='api', help_text='api, sit, beat, task, system', max_length=40)),
                    ('author', models.CharField(blank=True, max_length=64)),
                    ('idempotency_key', models.CharField(blank=True, default='', max_length=200)),
                    ('addressed', models.BooleanField(default=False)),
                    ('addressed_note', models.TextField(blank=True)),
                    ('addressed_at', models.DateTimeField(blank=True, null=True)),
                    ('refires', models.PositiveSmallIntegerField(default=0, help_text='turns that took it up again unaddressed')),
                    ('given_up_at', models.DateTimeField(blank=True, help_text='left unaddressed after the refire cap; reported, not retried', null=True)),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='triggers', to='runtime.session')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                    ('turn', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='triggers', to='runtime.turn')),
                ],
                options={
                    'db_table': 'harness_trigger',
                    'ordering': ['created_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='SessionEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('seq', models.PositiveBigIntegerField()),
                    ('kind', models.CharField(choices=[('TriggerAccepted', 'Trigger Accepted'), ('TurnStarted', 'Turn Started'), ('TurnEnded', 'Turn Ended'), ('AssistantOutput', 'Assistant Output'), ('TaskStateChanged', 'Task State Changed'), ('ProfileRefreshed', 'Profile Refreshed'), ('AgentStream', 'Agent Stream'), ('TurnFailure', 'Turn Failure')], max_length=32)),
                    ('data', models.JSONField(blank=True, default=dict)),
                    ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='runtime.session')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                    ('turn', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='events', to='runtime.turn')),
                ],
                options={
                    'db_table': 'harness_sessionevent',
                    'ordering': ['session', 'seq'],
                },
            ),
            migrations.CreateModel(
                name='UserProfile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('slug', models.SlugField(max_length=64)),
                    ('name', models.CharField(blank=True, max_length=200)),
                    ('user_md', models.TextField(blank=True, help_text='USER.md: who this person is to the agent')),
                    ('memory', models.TextField(blank=True)),
                    ('preferences', models.JSONField(blank=True, default=dict)),
                    ('version', models.PositiveIntegerField(default=1)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_userprofile',
                    'ordering': ['slug'],
                },
            ),
            migrations.AddField(
                model_name='session',
                name='user_profile',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='sessions', to='runtime.userprofile'),
            ),
            migrations.CreateModel(
                name='ProfileFieldVersion',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('field', models.CharField(help_text='the profile field (agents_md, memory, preferences, ...)', max_length=32)),
                    ('version', models.PositiveIntegerField(help_text="the profile's version while the field held this value")),
                    ('content', models.TextField(blank=True, help_text='the replaced value (preferences as JSON)')),
                    ('replaced_by', models.CharField(blank=True, help_text='api, or task:<id>', max_length=200)),
                    ('agent_profile', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='field_versions', to='runtime.agentprofile')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                    ('user_profile', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='field_versions', to='runtime.userprofile')),
                ],
                options={
                    'db_table': 'harness_profilefieldversion',
                    'ordering': ['-created_at', '-id'],
                },
            ),
            migrations.AddConstraint(
                model_name='agentprofile',
                constraint=models.UniqueConstraint(fields=('workspace', 'slug'), name='agentprofile_unique_slug'),
            ),
            migrations.AddConstraint(
                model_name='harnesssettings',
                constraint=models.UniqueConstraint(fields=('workspace',), name='harnesssettings_one_per_workspace'),
            ),
            migrations.AddConstraint(
                model_name='sessionschedule',
                constraint=models.UniqueConstraint(condition=models.Q(('kind', 'heartbeat')), fields=('session',), name='sessionschedule_one_heartbeat'),
            ),
            migrations.AddConstraint(
                model_name='sessionschedule',
                constraint=models.CheckConstraint(condition=models.Q(models.Q(('cron', ''), ('every_seconds__gt', 0), ('kind', 'heartbeat')), models.Q(('every_seconds__isnull', True), ('kind', 'cron'), models.Q(('cron', ''), _negated=True)), _connector='OR'), name='sessionschedule_kind_fields'),
            ),
            migrations.AddIndex(
                model_name='task',
                index=models.Index(fields=['session', 'created_at'], name='task_session_created'),
            ),
            migrations.AddIndex(
                model_name='task',
                index=models.Index(condition=models.Q(('state', 'pending')), fields=['workspace', 'created_at'], name='task_waiting'),
            ),
            migrations.AddIndex(
                model_name='task',
                index=models.Index(condition=models.Q(('state', 'running')), fields=['state'], name='task_running'),
            ),
            migrations.AddConstraint(
                model_name='turn',
                constraint=models.UniqueConstraint(fields=('session', 'number'), name='turn_unique_number'),
            ),
            migrations.AddIndex(
                model_name='trigger',
                index=models.Index(fields=['session', 'state', 'created_at'], name='trigger_session_state'),
            ),
            migrations.AddIndex(
                model_name='trigger',
                index=models.Index(condition=models.Q(('addressed', False), ('given_up_at__isnull', True), ('kind', 'user_message')), fields=['session', 'addressed'], name='trigger_unaddressed'),
            ),
            migrations.AddConstraint(
                model_name='trigger',
                constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key', ''), _negated=True), fields=('session', 'idempotency_key'), name='trigger_unique_idempotency_key'),
            ),
            migrations.AddConstraint(
                model_name='sessionevent',
                constraint=models.UniqueConstraint(fields=('session', 'seq'), name='sessionevent_unique_seq'),
            ),
            migrations.AddConstraint(
                model_name='userprofile',
                constraint=models.UniqueConstraint(fields=('workspace', 'slug'), name='userprofile_unique_slug'),
            ),
            migrations.AddIndex(
                model_name='session',
                index=models.Index(fields=['workspace', '-created_at'], name='session_ws_created'),
            ),
            migrations.AddIndex(
                model_name='profilefieldversion',
                index=models.Index(fields=['agent_profile', 'field', '-created_at'], name='pfv_agent'),
            ),
            migrations.AddIndex(
                model_name='profilefieldversion',
                index=models.Index(fields=['user_profile', 'field', '-created_at'], name='pfv_user'),
            ),
            migrations.AddConstraint(
                model_name='profilefieldversion',
                constraint=models.CheckConstraint(condition=models.Q(('agent_profile__isnull', True), ('user_profile__isnull', True), _connector='XOR'), name='profilefieldversion_one_profile'),
            ),
        ], database_operations=[]),
    ]
