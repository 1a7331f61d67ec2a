"""The platform's commands: up, web, proxy, worker, beat, down, status, workspace, apikey, operator, llm."""

import os
import sys

from django.conf import settings
from django.core.management.base import CommandError

from fathom import embedded, processes
from fathom.errors import ApplicationError
from fathom.llm.cli import register as register_llm
from fathom.models import ApiKey, Workspace
from fathom.operator_login import password_store
from fathom.scale_out import second_host_needs
from fathom.services import (
    apikey_create,
    apikey_revoke,
    operator_password_set,
    workspace_create,
    workspace_get,
)
from fathom.supervisor import data_dir_holder, run_stack, stack_status


def register(subparsers):
    up = subparsers.add_parser("up", help="migrate, then run the web server, a worker and beat until Ctrl-C")
    up.add_argument("--host", default=os.environ.get("FATHOM_HTTP_HOST", "127.0.0.1"))
    up.add_argument("--port", type=int, default=settings.HTTP_PORT)
    up.set_defaults(handler=_up)

    web = subparsers.add_parser("web", help="run only the web server (scale-out: one per machine, any number)")
    web.add_argument("--host", default=os.environ.get("FATHOM_HTTP_HOST", "127.0.0.1"))
    web.add_argument("--port", type=int, default=settings.HTTP_PORT)
    web.set_defaults(handler=_web)

    proxy = subparsers.add_parser("proxy", help="run only Festinger's Ollama-compatible proxy (one per workspace "
                                                "and port)")
    proxy.add_argument("--host", default=settings.FATHOM_PROXY_HOST)
    proxy.add_argument("--port", type=int, default=settings.FATHOM_PROXY_PORT or 11435)
    proxy.set_defaults(handler=_proxy)

    worker = subparsers.add_parser("worker", help="run only a Celery worker (scale-out: any number, anywhere)")
    worker.add_argument("--queues", default=",".join(settings.FATHOM_QUEUES),
                        help=f"comma-separated, of {', '.join(settings.FATHOM_QUEUES)} (default: all)")
    worker.add_argument("--concurrency", type=int, default=settings.FATHOM_WORKER_CONCURRENCY,
                        help="pool processes (default: FATHOM_WORKER_CONCURRENCY)")
    worker.add_argument("--name", default=f"worker{os.getpid()}@%h",
                        help="the worker's node name, unique per broker (%%h is the host name)")
    worker.add_argument("--pool", choices=["prefork", "threads"], default="prefork",
                        help="processes, or threads for I/O-bound model calls (the quality queue; then "
                             "--concurrency threads, at most FATHOM_DB_POOL_MAX_SIZE)")
    worker.set_defaults(handler=_worker)

    beat = subparsers.add_parser("beat", help="run only celery beat (exactly one per deployment)")
    beat.set_defaults(handler=_beat)

    down = subparsers.add_parser("down", help="stop the embedded PostgreSQL and Redis")
    down.set_defaults(handler=_down)

    status = subparsers.add_parser("status", help="what runs, where the data lives, and what a second host needs")
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

    operator = subparsers.add_parser("operator", help="the operator's account")
    operator_commands = operator.add_subparsers(dest="operator_command", required=True)
    password = operator_commands.add_parser(
        "password", help="set a new password (generated unless given), kept in the data dir's 0600 file")
    password.add_argument("--email", default=os.environ.get("FATHOM_ADMIN_EMAIL", "").strip() or "admin@localhost",
                          help="the account's login (default: FATHOM_ADMIN_EMAIL, or admin@localhost)")
    password.add_argument("--password", default=None, help="the new password (default: a generated one)")
    password.set_defaults(handler=_operator_password)

    register_llm(subparsers)


def _up(command, options):
    return run_stack(command, host=options["host"], port=options["port"])


def _web(command, options):
    _become(processes.web_argv(host=options["host"], port=options["port"]))


def _proxy(command, options):
    if refusal := processes.proxy_bind_refusal(options["host"]):
        raise CommandError(refusal)
    os.environ["FATHOM_PROXY_HOST"] = options["host"]  # the proxy checks the Host header against its bind
    _become(processes.proxy_argv(host=options["host"], port=options["port"]))


def _worker(command, options):
    queues = [queue.strip() for queue in options["queues"].split(",") if queue.strip()]
    unknown = processes.unknown_queues(queues)
    if not queues or unknown:
        raise CommandError(f"--queues takes some of {', '.join(settings.FATHOM_QUEUES)}; "
                           f"got {options['queues']!r}")
    if options["concurrency"] < 1:
        raise CommandError("--concurrency must be at least 1")
    if options["pool"] == "threads" and options["concurrency"] > settings.FATHOM_DB_POOL_MAX_SIZE:
        raise CommandError(f"--concurrency of a thread pool must be at most FATHOM_DB_POOL_MAX_SIZE "
                           f"({settings.FATHOM_DB_POOL_MAX_SIZE}): each thread may hold a connection of its pool")
    _become(processes.worker_argv(queues=queues, concurrency=options["concurrency"], name=options["name"],
                                  pool=options["pool"]))


def _beat(command, options):
    _become(processes.beat_argv())


def _become(argv: list[str]) -> None:
    """Replace this process with `argv`: signals (a service manager's SIGTERM) reach it directly."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def _down(command, options):
    holder = data_dir_holder(settings.DATA_DIR)
    if holder:
        raise CommandError(f"`fathom up` (pid {holder}) runs on {settings.DATA_DIR}; stop it with Ctrl-C instead")
    stopped = embedded.stop_all(settings.DATA_DIR)
    command.stdout.write(f"stopped: {', '.join(stopped)}" if stopped else "nothing embedded was running")


def _status(command, options):
    for line in [*stack_status(), *second_host_needs()]:
        command.stdout.write(line)


def _workspace_create(command, options):
    try:
        workspace = workspace_create(slug=options["slug"], name=options["name"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(f"created workspace {workspace.slug}")


def _workspace_list(command, options):
    for workspace in Workspace.objects.all():
        command.stdout.write(f"{workspace.slug}\t{workspace.name}")


def _apikey_create(command, options):
    try:
        workspace = workspace_get(slug=options["workspace"])
        issued = apikey_create(workspace=workspace, role=options["role"], name=options["name"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(f"API key {issued.key.prefix} ({issued.key.role} in {workspace.slug}); shown once:")
    command.stdout.write(issued.secret)


def _apikey_revoke(command, options):
    key = ApiKey.objects.filter(prefix=options["prefix"]).first()
    if key is None:
        raise CommandError(f"no API key with prefix {options['prefix']!r}")
    apikey_revoke(key=key)
    command.stdout.write(f"revoked {key.prefix}")


def _operator_password(command, options):
    try:
        password = operator_password_set(email=options["email"], password=options["password"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    path = password_store(email=options["email"], password=password)
    command.stdout.write(f"new password for {options['email']} (kept in {path}, mode 0600):")
    command.stdout.write(password)
