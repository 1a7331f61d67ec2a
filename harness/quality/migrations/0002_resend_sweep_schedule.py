from django.db import migrations


def create_schedule(apps, schema_editor):
    from harness.quality.schedules import resend_sweep_schedule_ensure

    resend_sweep_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("quality", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, migrations.RunPython.noop)]
