"""The full-text index reads a bounded prefix of a delta's content (lake.models.TEXT_INDEX_PREFIX_CHARS):
a tsvector holds at most 1 MB, and a longer one failed the write. A generated column cannot be altered,
so it is dropped (with its index) and added again, computed anew for every row."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('lake', '0004_reembed_stale_schedule'),
    ]

    operations = [
        migrations.RemoveIndex(model_name='delta', name='lake_delta_fts'),
        migrations.RemoveField(model_name='delta', name='search_vector'),
        migrations.AddField(
            model_name='delta',
            name='search_vector',
            field=models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.SearchVector(django.db.models.functions.text.Left('content', 100000), config='english'), output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.AddIndex(
            model_name='delta',
            index=django.contrib.postgres.indexes.GinIndex(fastupdate=False, fields=['search_vector'], name='lake_delta_fts'),
        ),
    ]
