"""The harness's tables move to the harness apps (runtime, fires, quality, conductor, autonomy) without
being copied: each app's 0001 takes the models into its state with the same tables, and this migration
drops them from the harness's state only. The content types follow the models (their app label changes),
so admin permissions and log entries keep pointing at them."""

from django.db import migrations

# model (lower case) -> the app that now holds it
NEW_APP = {
    "autonomydecision": "autonomy",
    "autonomysettings": "autonomy",
    "inboxmark": "autonomy",
    "pressuresample": "autonomy",
    "producerrun": "autonomy",
    "agendaitem": "conductor",
    "capabilitycall": "conductor",
    "conductorsettings": "conductor",
    "decision": "conductor",
    "run": "conductor",
    "runevent": "conductor",
    "fire": "fires",
    "firetoolcall": "fires",
    "fireturn": "fires",
    "feedback": "quality",
    "qualityattempt": "quality",
    "qualityprompt": "quality",
    "qualityretrypolicy": "quality",
    "qualityrun": "quality",
    "qualitysettings": "quality",
    "agentprofile": "runtime",
    "harnesssettings": "runtime",
    "profilefieldversion": "runtime",
    "session": "runtime",
    "sessionevent": "runtime",
    "sessionschedule": "runtime",
    "task": "runtime",
    "taskslots": "runtime",
    "trigger": "runtime",
    "turn": "runtime",
    "userprofile": "runtime",
}


def content_types_move(apps, schema_editor):
    _content_types_relabel(apps, {("harness", model): app for model, app in NEW_APP.items()})


def content_types_move_back(apps, schema_editor):
    _content_types_relabel(apps, {(app, model): "harness" for model, app in NEW_APP.items()})


def _content_types_relabel(apps, moves):
    """Give each (app label, model) content type its new app label; where a row with the new label exists
    already (a database that ran post_migrate in between), that one is kept and the old one deleted."""
    content_type = apps.get_model("contenttypes", "ContentType")
    for (label, model), new_label in moves.items():
        old = content_type.objects.filter(app_label=label, model=model)
        if content_type.objects.filter(app_label=new_label, model=model).exists():
            old.delete()
        else:
            old.update(app_label=new_label)


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("harness", "0010_autonomy_sit_state"),
        ("runtime", "0001_initial"),
        ("fires", "0002_initial"),
        ("quality", "0001_initial"),
        ("conductor", "0002_initial"),
        ("autonomy", "0002_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='agendaitem',
                name='run',
            ),
            migrations.RemoveField(
                model_name='agendaitem',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='capabilitycall',
                name='item',
            ),
            migrations.RemoveField(
                model_name='agentprofile',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='profilefieldversion',
                name='agent_profile',
            ),
            migrations.RemoveField(
                model_name='session',
                name='agent_profile',
            ),
            migrations.RemoveField(
                model_name='autonomydecision',
                name='session',
            ),
            migrations.RemoveField(
                model_name='autonomydecision',
                name='trigger',
            ),
            migrations.RemoveField(
                model_name='autonomydecision',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='autonomysettings',
                name='session',
            ),
            migrations.RemoveField(
                model_name='autonomysettings',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='capabilitycall',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='capabilitycall',
                name='run',
            ),
            migrations.RemoveField(
                model_name='capabilitycall',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='conductorsettings',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='decision',
                name='run',
            ),
            migrations.RemoveField(
                model_name='decision',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='feedback',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='feedback',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='fire',
                name='parent',
            ),
            migrations.RemoveField(
                model_name='fire',
                name='session',
            ),
            migrations.RemoveField(
                model_name='fire',
                name='turn',
            ),
            migrations.RemoveField(
                model_name='fire',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='qualityrun',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='task',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='fireturn',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='firetoolcall',
                name='fire',
            ),
            migrations.RemoveField(
                model_name='firetoolcall',
                name='turn',
            ),
            migrations.RemoveField(
                model_name='firetoolcall',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='fireturn',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='harnesssettings',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='inboxmark',
                name='trigger',
            ),
            migrations.RemoveField(
                model_name='inboxmark',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='pressuresample',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='producerrun',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='profilefieldversion',
                name='user_profile',
            ),
            migrations.RemoveField(
                model_name='profilefieldversion',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='qualityattempt',
                name='run',
            ),
            migrations.RemoveField(
                model_name='qualityattempt',
                name='workspace',
            ),
            migrations.DeleteModel(
                name='QualityPrompt',
            ),
            migrations.RemoveField(
                model_name='qualityretrypolicy',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='qualityrun',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='qualitysettings',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='run',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='runevent',
                name='run',
            ),
            migrations.RemoveField(
                model_name='runevent',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='session',
                name='user_profile',
            ),
            migrations.RemoveField(
                model_name='session',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='turn',
                name='session',
            ),
            migrations.RemoveField(
                model_name='task',
                name='session',
            ),
            migrations.RemoveField(
                model_name='trigger',
                name='session',
            ),
            migrations.RemoveField(
                model_name='sessionevent',
                name='session',
            ),
            migrations.RemoveField(
                model_name='sessionschedule',
                name='session',
            ),
            migrations.RemoveField(
                model_name='sessionevent',
                name='turn',
            ),
            migrations.RemoveField(
                model_name='sessionevent',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='sessionschedule',
                name='periodic_task',
            ),
            migrations.RemoveField(
                model_name='sessionschedule',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='task',
                name='workspace',
            ),
            migrations.DeleteModel(
                name='TaskSlots',
            ),
            migrations.RemoveField(
                model_name='trigger',
                name='turn',
            ),
            migrations.RemoveField(
                model_name='trigger',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='turn',
                name='workspace',
            ),
            migrations.RemoveField(
                model_name='userprofile',
                name='workspace',
            ),
            migrations.DeleteModel(
                name='AgendaItem',
            ),
            migrations.DeleteModel(
                name='AgentProfile',
            ),
            migrations.DeleteModel(
                name='AutonomyDecision',
            ),
            migrations.DeleteModel(
                name='AutonomySettings',
            ),
            migrations.DeleteModel(
                name='CapabilityCall',
            ),
            migrations.DeleteModel(
                name='ConductorSettings',
            ),
            migrations.DeleteModel(
                name='Decision',
            ),
            migrations.DeleteModel(
                name='Feedback',
            ),
            migrations.DeleteModel(
                name='Fire',
            ),
            migrations.DeleteModel(
                name='FireToolCall',
            ),
            migrations.DeleteModel(
                name='FireTurn',
            ),
            migrations.DeleteModel(
                name='HarnessSettings',
            ),
            migrations.DeleteModel(
                name='InboxMark',
            ),
            migrations.DeleteModel(
                name='PressureSample',
            ),
            migrations.DeleteModel(
                name='ProducerRun',
            ),
            migrations.DeleteModel(
                name='ProfileFieldVersion',
            ),
            migrations.DeleteModel(
                name='QualityAttempt',
            ),
            migrations.DeleteModel(
                name='QualityRetryPolicy',
            ),
            migrations.DeleteModel(
                name='QualityRun',
            ),
            migrations.DeleteModel(
                name='QualitySettings',
            ),
            migrations.DeleteModel(
                name='Run',
            ),
            migrations.DeleteModel(
                name='RunEvent',
            ),
            migrations.DeleteModel(
                name='Session',
            ),
            migrations.DeleteModel(
                name='SessionEvent',
            ),
            migrations.DeleteModel(
                name='SessionSchedule',
            ),
            migrations.DeleteModel(
                name='Task',
            ),
            migrations.DeleteModel(
                name='Trigger',
            ),
            migrations.DeleteModel(
                name='Turn',
            ),
            migrations.DeleteModel(
                name='UserProfile',
            ),
        ], database_operations=[]),
        migrations.RunPython(content_types_move, content_types_move_back),
    ]
