import django.core.serializers.json
import django.utils.timezone
from django.db import migrations, models


def create_outbox_relay(apps, schema_editor):
    from fathom.schedules import outbox_relay_schedule_ensure

    outbox_relay_schedule_ensure(
        periodic_task_model=apps.get_model("django_celery_beat", "PeriodicTask"),
        interval_model=apps.get_model("django_celery_beat", "IntervalSchedule"),
    )


class Migration(migrations.Migration):

    dependencies = [
        ('fathom', '0009_llmmodel_workspace'),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name='OutboxMessage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('message', models.JSONField(encoder=django.core.serializers.json.DjangoJSONEncoder, help_text='the Celery signature (a chord too), as a dict')),
                ('due_at', models.DateTimeField(help_text='not to run before (a countdown)')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('attempts', models.PositiveIntegerField(default=0, help_text='publishes the broker refused')),
                ('last_error', models.TextField(blank=True)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.RunPython(create_outbox_relay, migrations.RunPython.noop),
    ]
