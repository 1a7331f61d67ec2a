import django.contrib.postgres.indexes
from django.db import migrations

# GIN without a pending list: every search would scan what is pending linearly until autovacuum
# merges it. ALTER INDEX keeps the indexes (no rebuild); gin_clean_pending_list merges what is
# already pending.
# Vectors stored inline (MAIN, out of line only as a last resort) rather than in TOAST: computing a
# distance on a heap row (the step's pool, strips, centroids) then needs no TOAST lookup. Rows
# written before keep their storage until their embedding is written again (`lake reembed`).
SQL = """
ALTER TABLE lake_delta ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN provenance_embedding SET STORAGE MAIN;
ALTER INDEX lake_delta_tags SET (fastupdate = off);
ALTER INDEX lake_delta_fts SET (fastupdate = off);
SELECT gin_clean_pending_list('lake_delta_tags'::regclass), gin_clean_pending_list('lake_delta_fts'::regclass);
"""
REVERSE_SQL = """
ALTER TABLE lake_delta ALTER COLUMN embedding SET STORAGE EXTERNAL, ALTER COLUMN provenance_embedding SET STORAGE EXTERNAL;
ALTER INDEX lake_delta_tags RESET (fastupdate); ALTER INDEX lake_delta_fts RESET (fastupdate);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('lake', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, REVERSE_SQL)],
            state_operations=[
                migrations.RemoveIndex(model_name='delta', name='lake_delta_tags'),
                migrations.RemoveIndex(model_name='delta', name='lake_delta_fts'),
                migrations.AddIndex(
                    model_name='delta',
                    index=django.contrib.postgres.indexes.GinIndex(fastupdate=False, fields=['tags'], name='lake_delta_tags'),
                ),
                migrations.AddIndex(
                    model_name='delta',
                    index=django.contrib.postgres.indexes.GinIndex(fastupdate=False, fields=['search_vector'], name='lake_delta_fts'),
                ),
            ],
        ),
    ]
