"""The platform's commands: up, down, status, workspace, apikey, llm."""

import os

from django.conf import settings
from django.core.management.base import CommandError

from fathom import embedded
from fathom.errors import ApplicationError


def register(subparsers):
    up = subparsers.add_parser("up", help="migrate, then run the web server, a worker and beat until Ctrl-C")
    up.add_argument("--host", default=os.environ.get("FATHOM_HTTP_HOST", "127.0.0.1"))
    up.add_argument("--port", type=int, default=settings.HTTP_PORT)
    up.set_defaults(handler=_up)

    down = subparsers.add_parser("down", help="stop the embedded PostgreSQL and Redis")
    down.set_defaults(handler=_down)

    status = subparsers.add_parser("status", help="what runs and where the data lives")
    status.set_defaults(handler=_status)

    workspace = subparsers.add_parser("workspace", help="manage workspaces")
    workspace_commands = workspace.add_subparsers(dest="workspace_command", required=True)
    create = workspace_commands.add_parser("create", help="create a workspace")
    create.add_argument("slug")
    create.add_argument("--name", default="")
    create.set_defaults(handler=_workspace_create)
    listing = workspace_commands.add_parser("list", help="list workspaces")
    listing.set_defaults(handler=_workspace_list)

    apikey = subparsers.add_parser("apikey", help="manage API keys")
    apikey_commands = apikey.add_subparsers(dest="apikey_command", required=True)
    create = apikey_commands.add_parser("create", help="issue a key; prints it alone on the last line")
    create.add_argument("--workspace", required=True)
    create.add_argument("--role", required=True, choices=["owner", "operator", "viewer"])
    create.add_argument("--name", default="")
    create.set_defaults(handler=_apikey_create)
    revoke = apikey_commands.add_parser("revoke", help="revoke a key by its prefix")
    revoke.add_argument("prefix")
    revoke.set_defaults(handler=_apikey_revoke)

    from fathom.llm.cli import register as register_llm

    register_llm(subparsers)


def _up(command, options):
    from fathom.supervisor import run_stack

    return run_stack(command, host=options["host"], port=options["port"])


def _down(command, options):
    stopped = embedded.stop_all(settings.DATA_DIR)
    command.stdout.write(f"stopped: {', '.join(stopped)}" if stopped else "nothing embedded was running")


def _status(command, options):
    from fathom.supervisor import stack_status

    for line in stack_status():
        command.stdout.write(line)


def _workspace_create(command, options):
    from fathom.services import workspace_create

    try:
        workspace = workspace_create(slug=options["slug"], name=options["name"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(f"created workspace {workspace.slug}")


def _workspace_list(command, options):
    from fathom.models import Workspace

    for workspace in Workspace.objects.all():
        command.stdout.write(f"{workspace.slug}\t{workspace.name}")


def _apikey_create(command, options):
    from fathom.services import apikey_create, workspace_get

    try:
        workspace = workspace_get(slug=options["workspace"])
        issued = apikey_create(workspace=workspace, role=options["role"], name=options["name"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(f"API key {issued.key.prefix} ({issued.key.role} in {workspace.slug}); shown once:")
    command.stdout.write(issued.secret)


def _apikey_revoke(command, options):
    from fathom.models import ApiKey
    from fathom.services import apikey_revoke

    key = ApiKey.objects.filter(prefix=options["prefix"]).first()
    if key is None:
        raise CommandError(f"no API key with prefix {options['prefix']!r}")
    apikey_revoke(key=key)
    command.stdout.write(f"revoked {key.prefix}")
