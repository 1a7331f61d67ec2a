from django.db import migrations


def create_traces_prune(apps, schema_editor):
    from fathom.schedules import traces_prune_schedule_ensure

    traces_prune_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("fathom", "0005_traceevent_at"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_traces_prune, migrations.RunPython.noop)]
