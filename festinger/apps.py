from django.apps import AppConfig
from django.db.models.signals import post_migrate


class FestingerConfig(AppConfig):
    name = "festinger"

    def ready(self):
        # `fathom up` migrates first: every existing workspace is bootstrapped then (idempotent);
        # a workspace created later is bootstrapped on first use (festinger.services.world_ensure).
        post_migrate.connect(_bootstrap_after_migrate, sender=self)


def _bootstrap_after_migrate(sender, using="default", **kwargs):
    from fathom.models import Workspace
    from festinger.services import world_ensure

    for workspace in Workspace.objects.using(using).all():
        world_ensure(workspace=workspace)
