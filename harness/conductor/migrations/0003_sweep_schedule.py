from django.db import migrations


def create_schedule(apps, schema_editor):
    from harness.conductor.schedules import sweep_schedule_ensure

    sweep_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("conductor", "0002_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, migrations.RunPython.noop)]
