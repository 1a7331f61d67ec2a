"""`python manage.py fathom festinger ...`: bootstrap, iknowthat, resolve, check."""

from django.core.management.base import CommandError

from fathom.errors import ApplicationError
from fathom.models import Workspace
from fathom.services import workspace_get
from festinger.bootstrap import bootstrap_workspace
from festinger.iknowthat import iknowthat
from festinger.models import Conflict
from festinger.resolution import resolution_execute
from festinger.selectors import cycles_find
from festinger.services import world_ensure
from festinger.tasks import resolution_request


def register(subparsers):
    festinger = subparsers.add_parser("festinger", help="Festinger's world model")
    commands = festinger.add_subparsers(dest="festinger_command", required=True)

    bootstrap = commands.add_parser(
        "bootstrap", help="seed dimensions with their roots and the English dictionary (idempotent)")
    bootstrap.add_argument("--workspace", help="slug (default: every workspace)")
    bootstrap.set_defaults(handler=_bootstrap)

    iknowthat = commands.add_parser("iknowthat", help="store a fact: 'X -isa Y in context of Z' or 'X -ispart Y ...'")
    iknowthat.add_argument("fact")
    iknowthat.add_argument("--workspace", required=True)
    iknowthat.set_defaults(handler=_iknowthat)

    resolve = commands.add_parser("resolve", help="run the resolution job now, in this process")
    resolve.add_argument("--workspace", required=True)
    resolve.set_defaults(handler=_resolve)

    check = commands.add_parser("check", help="report every cycle in the graph (exit status 1 when one is found)")
    check.add_argument("--workspace", help="slug (default: every workspace)")
    check.set_defaults(handler=_check)


def _workspaces(options):
    if options.get("workspace"):
        try:
            return [workspace_get(slug=options["workspace"])]
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
    return list(Workspace.objects.all())


def _bootstrap(command, options):
    for workspace in _workspaces(options):
        counts = bootstrap_workspace(workspace=workspace)
        world_ensure(workspace=workspace)
        command.stdout.write(f"{workspace.slug}: {counts['concepts_added']} concepts added, "
                             f"{counts['dimension_roots']} seed dimension roots")


def _iknowthat(command, options):
    [workspace] = _workspaces(options)
    try:
        result = iknowthat(workspace=workspace, fact=options["fact"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    if isinstance(result, Conflict):
        command.stdout.write(f"conflict #{result.pk} queued ({result.collision_type}): {result.concept} already has "
                             f"{result.existing_parent} in [{result.dimension}]")
    else:
        command.stdout.write(f"stored: {result}")


def _resolve(command, options):
    [workspace] = _workspaces(options)
    run = resolution_execute(run_id=resolution_request(workspace=workspace, trigger="cli").pk,
                             on_full_batch=resolution_request)
    command.stdout.write(f"run #{run.pk} {run.status}: {run.processed} processed, {run.resolved} resolved, "
                         f"{run.dismissed} dismissed, {run.failed} failed{': ' + run.error if run.error else ''}")


def _check(command, options):
    found = 0
    for workspace in _workspaces(options):
        cycles = cycles_find(workspace=workspace)
        found += len(cycles)
        for dimension, members in cycles:
            command.stdout.write(f"{workspace.slug}: cycle in [{dimension}]: {' -> '.join(members)}")
    if found:
        raise CommandError(f"{found} cycle(s) found: remove an edge of each (admin's edges, or the resolution "
                           "of a conflict) and state the fact again")
    command.stdout.write("no cycles")
