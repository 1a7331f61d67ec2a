"""`fathom produce reflective|topical --workspace W`: run a producer now, inline, through the same
service as its task."""

import json

from django.core.management.base import CommandError

from fathom.errors import ApplicationError
from fathom.services import workspace_get
from harness.autonomy.producers import services


def register(subparsers):
    produce = subparsers.add_parser("produce", help="run a producer now (its proposals go through the gate)")
    produce.add_argument("producer", choices=["reflective", "topical"])
    produce.add_argument("--workspace", required=True)
    produce.add_argument("--mode", choices=["window", "l2"], help="topical: window (episodes) or l2 (topics)")
    produce.add_argument("--hours", type=int, default=24, help="how far back it reads (default 24)")
    produce.set_defaults(handler=_produce)


def _produce(command, options):
    try:
        workspace = workspace_get(slug=options["workspace"])
        run = services.producer_run_request(workspace=workspace, producer=options["producer"], origin="cli",
                                            mode=options["mode"] or "", hours=options["hours"], enqueue=False)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    run = services.producer_run(run_id=run.pk)
    command.stdout.write(f"{run.producer} run {run.pk}: {run.status}, read {run.read}, "
                         f"{len(run.proposals)} proposal(s){': ' + run.error if run.error else ''}")
    for proposal in run.proposals:
        command.stdout.write(json.dumps(proposal))
