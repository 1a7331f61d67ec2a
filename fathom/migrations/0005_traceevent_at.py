from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # The table may already be large (nothing deleted trace events before retention): build the
    # index without blocking the writes of running workers.
    atomic = False

    dependencies = [
        ("fathom", "0004_trace_list_and_usage"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="traceevent",
            index=models.Index(fields=["at"], name="traceevent_at"),
        ),
    ]
