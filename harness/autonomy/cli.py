"""`fathom autonomy show|set|sweep|decisions --workspace W`: read and flip the switch, run a sweep now (and
the producers' `fathom produce`)."""

import json
from datetime import datetime

from django.core.management.base import CommandError
from django.utils import timezone

from fathom.errors import ApplicationError
from fathom.services import workspace_get
from harness.autonomy import selectors, services
from harness.autonomy.models import AutonomyMode
from harness.autonomy.pressure import SIGNAL_NAMES, pressure_read
from harness.autonomy.producers.cli import register as register_producers


def register(subparsers):
    register_producers(subparsers)
    autonomy = subparsers.add_parser("autonomy", help="autonomy: pressure, the switch, decisions")
    commands = autonomy.add_subparsers(dest="autonomy_command", required=True)

    show = commands.add_parser("show", help="the settings and the pressure now, with its breakdown")
    show.add_argument("--workspace", required=True)
    show.set_defaults(handler=_show)

    change = commands.add_parser("set", help="flip the switch (off, observe, on) and/or change limits")
    change.add_argument("--workspace", required=True)
    change.add_argument("mode", nargs="?", choices=AutonomyMode.values)
    change.add_argument("--threshold", type=float)
    change.add_argument("--time-zone")
    change.add_argument("--quiet", metavar="HH:MM-HH:MM", help="quiet hours in the time zone ('' clears them)")
    change.add_argument("--idle-minutes", type=int)
    change.add_argument("--window-minutes", type=int)
    change.add_argument("--daily-sit-cap", type=int)
    change.add_argument("--daily-token-cap", type=int)
    change.add_argument("--sit-rounds", type=int)
    change.add_argument("--cron", help="scheduled Sits ('' clears it)")
    for name in SIGNAL_NAMES:
        change.add_argument(f"--weight-{name.replace('_', '-')}", type=float, dest=f"weight_{name}")
    change.set_defaults(handler=_set)

    sweep = commands.add_parser("sweep", help="run one sweep now (what beat does every minute)")
    sweep.set_defaults(handler=_sweep)

    decisions = commands.add_parser("decisions", help="the latest decisions and why")
    decisions.add_argument("--workspace", required=True)
    decisions.add_argument("--limit", type=int, default=20)
    decisions.set_defaults(handler=_decisions)


def _workspace(options):
    try:
        return workspace_get(slug=options["workspace"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None


def _show(command, options):
    settings = services.autonomy_settings_get(workspace=_workspace(options))
    gates = services.gates_read(settings=settings, now=timezone.now())
    reading = pressure_read(settings=settings, day_start=gates.day_start)
    verdict, _ = services.autonomy_now(settings=settings)
    command.stdout.write(f"mode {settings.mode}; threshold {settings.threshold}; pressure {reading.value}")
    command.stdout.write(f"now: {verdict.words}")
    command.stdout.write(json.dumps(reading.breakdown, indent=2))


def _set(command, options):
    workspace = _workspace(options)
    changes = {name: options[name] for name in ("threshold", "time_zone", "idle_minutes", "window_minutes",
                                                 "daily_sit_cap", "daily_token_cap", "sit_rounds", "cron",
                                                 *(f"weight_{n}" for n in SIGNAL_NAMES))
               if options.get(name) is not None}
    if options["mode"]:
        changes["mode"] = options["mode"]
    if options.get("quiet") is not None:
        changes.update(_quiet(options["quiet"]))
    try:
        settings = services.autonomy_settings_update(workspace=workspace, **changes)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(f"autonomy of {workspace.slug}: {settings.mode} (threshold {settings.threshold})")


def _quiet(text: str) -> dict:
    if not text.strip():
        return {"quiet_start": None, "quiet_end": None}
    try:
        start, end = (datetime.strptime(part.strip(), "%H:%M").time() for part in text.split("-"))
    except ValueError:
        raise CommandError("--quiet takes HH:MM-HH:MM, e.g. 22:00-07:00") from None
    return {"quiet_start": start, "quiet_end": end}


def _sweep(command, options):
    command.stdout.write(json.dumps(services.autonomy_sweep()))


def _decisions(command, options):
    for decision in selectors.decisions_list(workspace=_workspace(options))[: options["limit"]]:
        focus = f" focus: {decision.focus}" if decision.focus else ""
        state = f" ({decision.sit_state})" if decision.sit_state else ""
        command.stdout.write(f"{decision.created_at:%Y-%m-%d %H:%M:%S} {decision.action}{state} "
                             f"p={decision.pressure:.2f} {decision.words}{focus}")
