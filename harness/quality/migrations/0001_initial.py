"""The app's tables as they were in the harness app (state only: no table is created or copied)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('harness', '0010_autonomy_sit_state'),
        ('fathom', '0008_traceevent_ws_recollections'),
        ('fires', '0001_initial'),
    ]

    operations = [
        # The table exists already (created by harness's migrations 0001-0010): only Django's state moves.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='QualityPrompt',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('prompt_id', models.CharField(max_length=64, unique=True)),
                    ('text', models.TextField()),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                ],
                options={
                    'db_table': 'harness_qualityprompt',
                    'ordering': ['prompt_id'],
                },
            ),
            migrations.CreateModel(
                name='QualityRun',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('state', models.CharField(choices=[('running', 'Running'), ('verifying', 'Verifying'), ('done', 'Done')], default='running', max_length=16)),
                    ('complexity', models.JSONField(blank=True, default=dict, help_text='level, reason, subtask_count, workflow_type, expected, is_fallback')),
                    ('plan', models.JSONField(blank=True, default=dict, help_text='the selected plan, its score, the candidates')),
                    ('sources', models.JSONField(blank=True, default=list, help_text='delta ids the pre-flight retrieved')),
                    ('swarm', models.JSONField(blank=True, default=dict, help_text='specialists, their results, the aggregate')),
                    ('attempt', models.PositiveSmallIntegerField(default=1, help_text='the attempt that runs now')),
                    ('iterations', models.PositiveSmallIntegerField(default=1, help_text='deep-synthesis iteration: attempts made whatever their score, the best kept (1: off)')),
                    ('waiting_for', models.CharField(blank=True, help_text="'verifier' or 'swarm' while parked", max_length=16)),
                    ('waiting_token', models.CharField(blank=True, help_text='the chord the fire waits for', max_length=64)),
                    ('waiting_since', models.DateTimeField(blank=True, null=True)),
                    ('scores', models.JSONField(blank=True, default=dict, help_text='RQS / RecQS / DocQS of the final answer')),
                    ('degraded', models.JSONField(blank=True, default=dict, help_text='set when the attempts ran out')),
                    ('profile', models.JSONField(blank=True, default=dict, help_text='the workspace profile after this run')),
                    ('context_metrics', models.JSONField(blank=True, default=dict)),
                    ('events', models.JSONField(blank=True, default=list, help_text='every harness event of the run, in order')),
                    ('final_attempt', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('verifier_score', models.FloatField(blank=True, help_text="the final attempt's verifier score", null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('fire', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='quality', to='fires.fire')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_qualityrun',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='QualityAttempt',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('number', models.PositiveSmallIntegerField()),
                    ('first_turn', models.PositiveSmallIntegerField(default=0, help_text='main-phase turns before this attempt')),
                    ('healing_prompt', models.TextField(blank=True)),
                    ('response', models.JSONField(blank=True, default=dict)),
                    ('stream_alerts', models.JSONField(blank=True, default=list)),
                    ('contract', models.JSONField(blank=True, default=dict)),
                    ('verifier', models.JSONField(blank=True, default=dict, help_text='the combined verdict')),
                    ('perspectives', models.JSONField(blank=True, default=dict, help_text="each verifier task's verdict, by name")),
                    ('combined', models.FloatField(blank=True, null=True)),
                    ('decision', models.JSONField(blank=True, default=dict, help_text="should_retry's answer and reason")),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                    ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempts', to='quality.qualityrun')),
                ],
                options={
                    'db_table': 'harness_qualityattempt',
                    'ordering': ['run', 'number'],
                },
            ),
            migrations.CreateModel(
                name='QualitySettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('enabled', models.BooleanField(default=True, help_text="the harness wraps this workspace's top-level fires")),
                    ('swarm_enabled', models.BooleanField(default=False, help_text="synthesis over many sources may run a specialist swarm (the seed's plan entitlement)")),
                    ('swarm_min_sources', models.PositiveSmallIntegerField(default=5)),
                    ('swarm_specialists', models.JSONField(blank=True, default=list, help_text="the specialists' angles (empty: the five defaults)")),
                    ('calibration', models.TextField(blank=True, help_text="rebuilt every 5 minutes from feedback mismatches; the verifier's system prompt carries it")),
                    ('calibration_built_at', models.DateTimeField(blank=True, null=True)),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'verbose_name': 'quality settings',
                    'verbose_name_plural': 'quality settings',
                    'db_table': 'harness_qualitysettings',
                },
            ),
            migrations.CreateModel(
                name='Feedback',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('rating', models.CharField(choices=[('up', 'Up'), ('down', 'Down')], max_length=8)),
                    ('comment', models.TextField(blank=True)),
                    ('verifier_score', models.FloatField(blank=True, help_text="the fire's verifier score when given", null=True)),
                    ('author', models.CharField(blank=True, max_length=200)),
                    ('fire', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='fires.fire')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'db_table': 'harness_feedback',
                    'ordering': ['-created_at'],
                    'indexes': [models.Index(fields=['workspace', '-created_at'], name='feedback_ws_created')],
                },
            ),
            migrations.CreateModel(
                name='QualityRetryPolicy',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('workflow_type', models.CharField(choices=[('chat', 'chat'), ('synthesis', 'synthesis'), ('recommendation', 'recommendation'), ('drafting', 'drafting'), ('full_pipeline', 'full_pipeline')], max_length=20)),
                    ('max_attempts', models.PositiveSmallIntegerField()),
                    ('good_enough_score', models.FloatField()),
                    ('low_quality_threshold', models.FloatField()),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fathom.workspace')),
                ],
                options={
                    'verbose_name': 'quality retry policy',
                    'verbose_name_plural': 'quality retry policies',
                    'db_table': 'harness_qualityretrypolicy',
                    'ordering': ['workspace', 'workflow_type'],
                    'constraints': [models.UniqueConstraint(fields=('workspace', 'workflow_type'), name='qualityretrypolicy_unique_workflow')],
                },
            ),
            migrations.AddIndex(
                model_name='qualityrun',
                index=models.Index(fields=['workspace', '-created_at'], name='qualityrun_ws_created'),
            ),
            migrations.AddIndex(
                model_name='qualityrun',
                index=models.Index(condition=models.Q(('waiting_for', ''), _negated=True), fields=['waiting_since'], name='qualityrun_waiting'),
            ),
            migrations.AddConstraint(
                model_name='qualityattempt',
                constraint=models.UniqueConstraint(fields=('run', 'number'), name='qualityattempt_unique_number'),
            ),
            migrations.AddConstraint(
                model_name='qualitysettings',
                constraint=models.UniqueConstraint(fields=('workspace',), name='qualitysettings_one_per_workspace'),
            ),
        ], database_operations=[]),
    ]
