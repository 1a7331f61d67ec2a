from django.db import migrations


def create_flush_schedule(apps, schema_editor):
    from festinger.cache import counts_flush_schedule_ensure

    counts_flush_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("festinger", "0001_world_model"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_flush_schedule, migrations.RunPython.noop)]
