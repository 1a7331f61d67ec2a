"""`fathom quality show|set`: a workspace's quality settings from the shell, through the same
validation and service as REST (PATCH /v1/quality/settings)."""

import json

from django.core.management.base import CommandError

from fathom.errors import ApplicationError
from fathom.services import workspace_get
from harness.quality import services
from harness.quality.api import QualitySettingsView
from harness.quality.configuration import quality_settings_get, quality_settings_summary

EXAMPLE = '{"swarm_enabled": true, "contracts": {"chat": {"min_output_chars": 80}}}'


def register(subparsers):
    quality = subparsers.add_parser("quality", help="a workspace's quality harness settings")
    commands = quality.add_subparsers(dest="quality_command", required=True)
    show = commands.add_parser("show", help="print the settings as JSON (as GET /v1/quality/settings)")
    show.add_argument("--workspace", required=True, help="workspace slug")
    show.set_defaults(handler=_show)
    change = commands.add_parser("set", help="change them with a JSON object, as PATCH /v1/quality/settings takes; "
                                             f"e.g. '{EXAMPLE}'")
    change.add_argument("--workspace", required=True, help="workspace slug")
    change.add_argument("changes", help="the JSON object of changes")
    change.set_defaults(handler=_set)


def _show(command, options):
    workspace = _workspace(options["workspace"])
    command.stdout.write(json.dumps(quality_settings_summary(quality_settings_get(workspace_id=workspace.pk)),
                                    indent=2))


def _set(command, options):
    workspace = _workspace(options["workspace"])
    try:
        changes = json.loads(options["changes"])
    except json.JSONDecodeError as exc:
        raise CommandError(f"changes: not JSON ({exc}); e.g. '{EXAMPLE}'") from None
    data = QualitySettingsView.Input(data=changes)
    if not data.is_valid():
        raise CommandError(f"changes: {json.dumps(data.errors)}")
    try:
        row = services.quality_settings_update(workspace_id=workspace.pk, **data.validated_data)
    except ApplicationError as exc:
        raise CommandError(str(exc)) from None
    command.stdout.write(json.dumps(quality_settings_summary(row), indent=2))


def _workspace(slug: str):
    try:
        return workspace_get(slug=slug)
    except ApplicationError as exc:
        raise CommandError(str(exc)) from None
