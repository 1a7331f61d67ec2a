"""The app's tables as they were in the harness app (state only: no table is created or copied)."""

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
                name='AutonomyDecision',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('mode', models.CharField(choices=[('off', 'Off'), ('observe', 'Observe'), ('on', 'On')], max_length=8)),
                    ('action', models.CharField(choices=[('sit', 'Sit'), ('would_sit', 'Would Sit'), ('skip', 'Skip')], max_length=10)),
                    ('reason', models.CharField(help_text='why: below_threshold, quiet_hours, not_idle, ...', max_length=32)),
                    ('detail', models.TextField(blank=True)),
                    ('pressure', models.FloatField(default=0)),
                    ('breakdown', models.JSONField(blank=True, default=dict)),
                    ('window_start', models.DateTimeField()),
                    ('scheduled', models.BooleanField(default=False, help_text='started by the cron schedule, not by pressure')),
                    ('focus', models.TextField(blank=True, help_text="the focus pre-pass's output: the Sit's first prompt")),
                    ('focus_source', models.CharField(blank=True, help_text='model, or fallback (the top signal)', max_length=16)),
                    ('focus_error', models.TextField(blank=True)),
                    ('focus_tokens', models.PositiveIntegerField(default=0, help_text="the focus calls' tokens (they count toward the daily token cap)")),
                    ('sit_state', models.CharField(blank=True, choices=[('claimed', 'Claimed'), ('started', 'Started'), ('lost', 'Lost')], help_text="a sit decision's start: claimed, started or lost", max_length=8)),
                    ('start_queued_at', models.DateTimeField(blank=True, help_text="when the Sit's start was last queued", null=True)),
                    ('start_attempts', models.PositiveSmallIntegerField(default=0, help_text="how often the Sit's start was queued")),
                ],
                options={
                    'db_table': 'harness_autonomydecision',
                    'ordering': ['-created_at', '-id'],
                },
            ),
            migrations.CreateModel(
                name='AutonomySettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('mode', models.CharField(choices=[('off', 'Off'), ('observe', 'Observe'), ('on', 'On')], default='observe', max_length=8)),
                    ('threshold', models.FloatField(default=0.35, help_text='pressure (0-1) at or above which Fathom sits')),
                    ('time_zone', models.CharField(default='UTC', help_text='IANA name; quiet hours are read in it', max_length=64)),
                    ('quiet_start', models.TimeField(blank=True, help_text='no autonomous Sit from this local time ...', null=True)),
                    ('quiet_end', models.TimeField(blank=True, help_text='... until this one (may wrap midnight)', null=True)),
                    ('idle_minutes', models.PositiveIntegerField(default=15, help_text='sit only after this long without a user message')),
                    ('window_minutes', models.PositiveIntegerField(default=60, help_text='at most one autonomous Sit per window')),
                    ('daily_sit_cap', models.PositiveSmallIntegerField(default=6, help_text='autonomous Sits per local day')),
                    ('daily_token_cap', models.PositiveIntegerField(default=200000, help_text="tokens autonomous Sits may use per local day (their fires' and their focus calls')")),
                    ('sit_rounds', models.PositiveSmallIntegerField(default=3, help_text='round cap of an autonomous Sit')),
                    ('series_hours', models.PositiveSmallIntegerField(default=24, help_text='how long pressure samples and skips are kept')),
                    ('cron', models.CharField(blank=True, help_text='optional scheduled Sits (cron, in time_zone): a beat entry of their own', max_length=120)),
                    ('weight_unprovenanced', models.FloatField(default=0.25)),
                    ('weight_directives', models.FloatField(default=0.15)),
                    ('weight_since_sit', models.FloatField(default=0.15)),
                    ('weight_salient_threads', models.FloatField(default=0.1)),
                    ('weight_mood_shift', models.FloatField(default=0.1)),
                    ('weight_dormant_patterns', models.FloatField(default=0.05)),
                    ('weight_pending_conflicts', models.FloatField(default=0.1)),
                    ('weight_duplicate_markers', models.FloatField(default=0.1)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                ],
                options={
                    'verbose_name': 'autonomy settings',
                    'verbose_name_plural': 'autonomy settings',
                    'db_table': 'harness_autonomysettings',
                },
            ),
            migrations.CreateModel(
                name='InboxMark',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('delta_id', models.CharField(max_length=32)),
                    ('state', models.CharField(choices=[('acknowledged', 'Acknowledged'), ('dismissed', 'Dismissed'), ('acted', 'Acted')], max_length=16)),
                    ('actor', models.CharField(blank=True, max_length=200)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                ],
                options={
                    'db_table': 'harness_inboxmark',
                },
            ),
            migrations.CreateModel(
                name='PressureSample',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('value', models.FloatField()),
                    ('breakdown', models.JSONField(default=dict)),
                ],
                options={
                    'db_table': 'harness_pressuresample',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='ProducerRun',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('producer', models.CharField(choices=[('reflective', 'Reflective'), ('topical', 'Topical')], max_length=16)),
                    ('mode', models.CharField(blank=True, help_text='topical: window (episodes) or l2 (topics)', max_length=8)),
                    ('hours', models.PositiveIntegerField(default=24, help_text='the window it reads, back from its start')),
                    ('origin', models.CharField(choices=[('pressure', 'Pressure'), ('beat', 'Beat'), ('cli', 'Cli'), ('api', 'Api')], max_length=10)),
                    ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=10)),
                    ('window_start', models.DateTimeField(blank=True, help_text='pressure runs: one per window', null=True)),
                    ('proposals', models.JSONField(blank=True, default=list, help_text='[{id, level, status, delta, decision}]')),
                    ('model_calls', models.PositiveSmallIntegerField(default=0)),
                    ('read', models.PositiveIntegerField(default=0, help_text='how many deltas it was shown')),
                    ('error', models.TextField(blank=True)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                ],
                options={
                    'db_table': 'harness_producerrun',
                    'ordering': ['-created_at', '-id'],
                },
            ),
        ], database_operations=[]),
    ]
