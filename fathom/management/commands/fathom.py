"""`python manage.py fathom <command>`: the one entry point for running and operating Fathom.

Each installed app may add commands with a `cli` module exposing `register(subparsers)`; every
added parser sets `handler=function(command, options)`."""

from importlib import import_module

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run and operate Fathom: up, down, status, workspace, apikey, and the apps' own commands."

    def add_arguments(self, parser):
        subparsers = parser.add_subparsers(dest="subcommand", required=True, metavar="command")
        for app in apps.get_app_configs():
            try:
                module = import_module(f"{app.name}.cli")
            except ModuleNotFoundError as exc:
                if exc.name != f"{app.name}.cli":
                    raise
                continue
            module.register(subparsers)

    def handle(self, *args, **options):
        handler = options.get("handler")
        if handler is None:
            raise CommandError("name a command; see --help")
        return handler(self, options)
