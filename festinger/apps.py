from django.apps import AppConfig
from django.db.models.signals import post_migrate


class FestingerConfig(AppConfig):
    name = "festinger"

    def ready(self):
        # `fathom up` migrates first: every existing workspace is bootstrapped then (idempotent); a new
        # workspace is bootstrapped as it is created (`workspace_created`); any other on first use
        # (festinger.services.world_ensure).
        post_migrate.connect(_bootstrap_after_migrate, sender=self)

    def workspace_created(self, *, workspace):
        """fathom.services.workspace_created: the new workspace's world model exists (seed dimensions,
        dictionary, configuration, the resolution job's schedule), so Festinger is active at once."""
        from festinger.services import world_ensure

        world_ensure(workspace=workspace)


def _bootstrap_after_migrate(sender, using="default", **kwargs):
    from fathom.models import Workspace
    from festinger.services import world_ensure

    for workspace in Workspace.objects.using(using).all():
        world_ensure(workspace=workspace)
