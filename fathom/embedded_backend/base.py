"""Django's PostgreSQL backend, pointed at the embedded server: the first connection a process
opens starts the server (and the embedded Redis) if nothing runs yet."""

from django.conf import settings
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper

from fathom import embedded


class DatabaseWrapper(PostgresDatabaseWrapper):
    def get_connection_params(self):
        params = super().get_connection_params()
        embedded.ensure_started(
            settings.DATA_DIR, postgres=True, redis=settings.EMBEDDED_REDIS
        )
        params["host"] = embedded.EmbeddedPostgres(settings.DATA_DIR).ensure_running()
        return params
