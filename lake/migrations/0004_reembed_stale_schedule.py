from django.db import migrations


def create_schedule(apps, schema_editor):
    from lake.schedules import reembed_stale_schedule_ensure

    reembed_stale_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("lake", "0003_media"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, migrations.RunPython.noop)]
