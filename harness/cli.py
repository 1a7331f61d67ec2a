"""`fathom autonomy ...`, `fathom produce ...`, `fathom client` (and the harness's other commands): through the same
services as REST and the admin."""

from harness.autonomy.cli import register as register_autonomy
from harness.autonomy.producers.cli import register as register_producers
from harness.runtime.cli import register as register_client


def register(subparsers):
    register_autonomy(subparsers)
    register_producers(subparsers)
    register_client(subparsers)
