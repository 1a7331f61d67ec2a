import django.core.validators
from django.db import migrations, models


def heartbeat_staleness(apps, schema_editor):
    # 300 s was the default while a claim's heartbeat moved only with its holder's writes; with a
    # heartbeat every 5 s, a claim silent for 20 s is gone. A value an operator chose is kept.
    apps.get_model("runtime", "HarnessSettings").objects.filter(stale_after_seconds=300).update(stale_after_seconds=20)


class Migration(migrations.Migration):

    dependencies = [
        ('runtime', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='harnesssettings',
            name='stale_after_seconds',
            field=models.PositiveIntegerField(default=20, help_text="a claimed session, fire or task whose claim's heartbeat is this old is taken over (a runner's heartbeat is refreshed every 5 s while it holds the claim)", validators=[django.core.validators.MinValueValidator(15)]),
        ),
        migrations.RunPython(heartbeat_staleness, migrations.RunPython.noop),
    ]
