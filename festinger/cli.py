"""`python manage.py fathom festinger ...`: bootstrap."""

from django.core.management.base import CommandError

from fathom.errors import ApplicationError


def register(subparsers):
    festinger = subparsers.add_parser("festinger", help="Festinger's world model")
    commands = festinger.add_subparsers(dest="festinger_command", required=True)

    bootstrap = commands.add_parser(
        "bootstrap", help="seed dimensions with their roots and the English dictionary (idempotent)")
    bootstrap.add_argument("--workspace", help="slug (default: every workspace)")
    bootstrap.set_defaults(handler=_bootstrap)


def _workspaces(options):
    from fathom.models import Workspace
    from fathom.services import workspace_get

    if options.get("workspace"):
        try:
            return [workspace_get(slug=options["workspace"])]
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
    return list(Workspace.objects.all())


def _bootstrap(command, options):
    from festinger.bootstrap import bootstrap_workspace
    from festinger.services import world_ensure

    for workspace in _workspaces(options):
        counts = bootstrap_workspace(workspace=workspace)
        world_ensure(workspace=workspace)
        command.stdout.write(f"{workspace.slug}: {counts['concepts_added']} concepts added, "
                             f"{counts['dimension_roots']} seed dimension roots")
