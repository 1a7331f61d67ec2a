from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # As 0005: the table is large, its writers keep writing while the index is built.
    atomic = False

    dependencies = [
        ("fathom", "0007_llmmodel_api"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="traceevent",
            index=models.Index(condition=models.Q(("kind", "festinger.recollection")), fields=["workspace", "-at"],
                               name="traceevent_ws_recollections"),
        ),
    ]
