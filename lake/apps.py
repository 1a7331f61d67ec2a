from django.apps import AppConfig
from django.db.models.signals import post_migrate


class LakeConfig(AppConfig):
    name = "lake"

    def ready(self):
        from lake import checks  # noqa: F401  (registers the lake's system checks)

        # The beat entries created in code rather than by a data migration exist after every migrate
        # (only a missing one is created: an operator's edits in admin are kept).
        post_migrate.connect(_schedules_ensure, sender=self)


def _schedules_ensure(sender, **kwargs):
    from lake.schedules import embed_missing_schedule_ensure

    embed_missing_schedule_ensure()
