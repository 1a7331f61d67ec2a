from django.apps import AppConfig


class HarnessConfig(AppConfig):
    """Installed only for its historical migrations (0001-0010 create the harness's tables on a fresh
    database); the tables belong to the harness apps (runtime, fires, quality, conductor, autonomy)."""

    name = "harness"
