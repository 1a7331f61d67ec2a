"""`fathom autonomy ...` (and the harness's other commands): through the same services as REST and
the admin."""

from harness.autonomy.cli import register as register_autonomy


def register(subparsers):
    register_autonomy(subparsers)
