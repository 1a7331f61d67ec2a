"""`fathom proposals ...`: draft, list, approve and deny from a shell or a script, through the same
service as REST and the admin."""

import getpass
import json
from pathlib import Path

from django.core.management.base import CommandError

from fathom.auth import operator_actor
from fathom.errors import ApplicationError
from fathom.services import workspace_get
from proposals.models import Proposal
from proposals.selectors import pending_first
from proposals.services import proposal_approve, proposal_deny, proposal_draft


def register(subparsers):
    proposals = subparsers.add_parser("proposals", help="draft, list, approve and deny proposals")
    commands = proposals.add_subparsers(dest="proposals_command", required=True)

    listing = commands.add_parser("list", help="proposals of a workspace, pending first")
    listing.add_argument("--workspace", required=True)
    listing.add_argument("--status", choices=["pending", "approved", "denied", "failed"])
    listing.add_argument("--tool")
    listing.set_defaults(handler=_list)

    draft = commands.add_parser("draft", help="draft a proposal (the auto-approve gate applies)")
    draft.add_argument("--workspace", required=True)
    draft.add_argument("--tool", required=True)
    draft.add_argument("--title", required=True)
    draft.add_argument("--payload", required=True, help="JSON, or @file.json")
    draft.add_argument("--level", type=int)
    draft.add_argument("--rationale", default="")
    draft.add_argument("--producer", default="script:cli")
    draft.set_defaults(handler=_draft)

    approve = commands.add_parser("approve", help="approve a proposal (optionally with an edited payload)")
    approve.add_argument("id", type=int)
    approve.add_argument("--payload", help="an edited payload: JSON, or @file.json")
    approve.add_argument("--by", default=None, help="who decides (default: operator:login:<your login>)")
    approve.set_defaults(handler=_approve)

    deny = commands.add_parser("deny", help="deny a proposal")
    deny.add_argument("id", type=int)
    deny.add_argument("--reason", required=True)
    deny.add_argument("--by", default=None)
    deny.set_defaults(handler=_deny)


def _list(command, options):
    queryset = Proposal.objects.filter(workspace__slug=options["workspace"])
    if options["status"]:
        queryset = queryset.filter(status=options["status"])
    if options["tool"]:
        queryset = queryset.filter(tool=options["tool"])
    for proposal in pending_first(queryset)[:500]:
        level = f"L{proposal.level}" if proposal.level is not None else "-"
        command.stdout.write(f"{proposal.pk}\t{proposal.status}\t{proposal.tool}\t{level}\t{proposal.title}")


def _draft(command, options):
    try:
        proposal = proposal_draft(
            workspace=workspace_get(slug=options["workspace"]), tool=options["tool"], title=options["title"],
            payload=_json(options["payload"]), level=options["level"], rationale=options["rationale"],
            producer=options["producer"],
        )
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    _report(command, proposal)


def _approve(command, options):
    payload = _json(options["payload"]) if options["payload"] else None
    try:
        proposal = proposal_approve(proposal=_get(options["id"]), decided_by=_by(options), payload=payload)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    _report(command, proposal)


def _deny(command, options):
    try:
        proposal = proposal_deny(proposal=_get(options["id"]), decided_by=_by(options), reason=options["reason"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    _report(command, proposal)


def _get(proposal_id: int):
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    if proposal is None:
        raise CommandError(f"no proposal {proposal_id}")
    return proposal


def _by(options) -> str:
    return options["by"] or operator_actor(kind="login", name=getpass.getuser())


def _json(text: str):
    try:
        return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as exc:
        raise CommandError(f"payload: {exc}") from None


def _report(command, proposal):
    detail = proposal.result_ref or proposal.failure_reason
    command.stdout.write(f"proposal {proposal.pk}: {proposal.status}" + (f" ({detail})" if detail else ""))
