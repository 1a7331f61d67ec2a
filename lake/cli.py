"""`python manage.py fathom lake ...`: reembed, backfill-centroids, search, stats."""

import json
import time
from datetime import datetime

from django.core.management.base import CommandError
from django.utils.dateparse import parse_datetime

from fathom.errors import ApplicationError
from fathom.services import workspace_get
from lake.selectors import deltas_search, lake_stats
from lake.services import deltas_reembed, provenance_centroids_refresh


def register(subparsers):
    lake = subparsers.add_parser("lake", help="the lake: embeddings, centroids, search")
    commands = lake.add_subparsers(dest="lake_command", required=True)

    reembed = commands.add_parser("reembed", help="compute embeddings again with the configured embedder")
    reembed.add_argument("--workspace", help="slug (default: every workspace)")
    reembed.add_argument("--tag", action="append", default=[], help="only deltas with this tag (repeatable)")
    reembed.add_argument("--kind", default="", help="only deltas with kind:<kind>")
    reembed.add_argument("--source", default="")
    reembed.add_argument("--since", type=_datetime, help="created at or after (ISO 8601)")
    reembed.add_argument("--until", type=_datetime, help="created before (ISO 8601)")
    which = reembed.add_mutually_exclusive_group()
    which.add_argument("--missing", action="store_true", help="only deltas that have no embedding yet")
    which.add_argument("--stale", action="store_true", help="only deltas embedded by another embedder or model")
    reembed.add_argument("--batch-size", type=int, default=None)
    reembed.set_defaults(handler=_reembed)

    backfill = commands.add_parser("backfill-centroids",
                                   help="compute provenance centroids that are missing (or all, with --force)")
    backfill.add_argument("--workspace", help="slug (default: every workspace)")
    backfill.add_argument("--force", action="store_true", help="recompute every centroid")
    backfill.set_defaults(handler=_backfill)

    search = commands.add_parser("search", help="search a workspace's lake and print the recall")
    search.add_argument("query")
    search.add_argument("--workspace", required=True)
    search.add_argument("--depth", default="normal", choices=["shallow", "normal", "deep"])
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "text"])
    search.add_argument("--budget", type=int, default=None, help="characters of recall (default FATHOM_SEARCH_BUDGET_CHARS)")
    search.add_argument("--json", action="store_true", help="print the structured rows too")
    search.set_defaults(handler=_search)

    stats = commands.add_parser("stats", help="counts of a workspace's lake")
    stats.add_argument("--workspace", required=True)
    stats.set_defaults(handler=_stats)


def _reembed(command, options):
    progress = Progress(command.stderr)
    try:
        written = deltas_reembed(
            workspace=_workspace(options.get("workspace")), tags=options["tag"], kind=options["kind"],
            source=options["source"], since=options.get("since"), until=options.get("until"),
            missing_only=options["missing"], stale_only=options["stale"], batch_size=options.get("batch_size"),
            progress=progress)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    progress.finish()
    command.stdout.write(f"embedded {written} delta(s)")


def _backfill(command, options):
    written = provenance_centroids_refresh(workspace=_workspace(options.get("workspace")), force=options["force"],
                                           partial=True)
    command.stdout.write(f"wrote {written} centroid(s)")


def _search(command, options):
    try:
        result = deltas_search(workspace=_workspace(options["workspace"]), query=options["query"],
                               depth=options["depth"], limit=options["limit"], mode=options["mode"],
                               budget=options["budget"])
    except ApplicationError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(result.rendered)
    if options["json"]:
        command.stdout.write(json.dumps([row.as_dict() for row in result.rows], indent=2))


def _stats(command, options):
    command.stdout.write(json.dumps(lake_stats(workspace=_workspace(options["workspace"])), indent=2, default=str))


def _workspace(slug):
    if not slug:
        return None

    try:
        return workspace_get(slug=slug)
    except ApplicationError as exc:
        raise CommandError(exc.message) from None


def _datetime(value: str) -> datetime:
    parsed = parse_datetime(value) or (parse_datetime(f"{value}T00:00:00+00:00") if len(value) == 10 else None)
    if parsed is None:
        raise ValueError(f"not an ISO 8601 time: {value}")
    return parsed


class Progress:
    """A one-line progress bar on the command's stderr: `[#########     ] 4,200/10,000  42%  310/s`."""

    width = 30

    def __init__(self, stream):
        self.stream = stream  # a management command's OutputWrapper
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        filled = self.width if not total else int(self.width * done / total)
        percent = 100 if not total else int(100 * done / total)
        rate = done / max(time.monotonic() - self.started, 1e-6)
        bar = "#" * filled + " " * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done:,}/{total:,} {percent:3d}% {rate:,.0f}/s", ending="")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("")
