from django.db import migrations


def create_heartbeat(apps, schema_editor):
    from fathom.schedules import heartbeat_schedule_ensure

    heartbeat_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("fathom", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_heartbeat, migrations.RunPython.noop)]
