"""Bootstrap of a workspace's world model (seed 002, T12 and T13), idempotent: the six seed dimensions
with their root edges, and the English dictionary at saliency 0."""

from functools import cache
from importlib import resources

from django.db import connection, transaction
from django.utils import timezone

from festinger.models import Concept, Edge, Source

# The seed's dimension taxonomy: (token, the question it answers, is_isa).
SEED_DIMENSIONS = (
    ("type", "What kind of thing is this?", True),
    ("membership", "What system or project does this belong to?", False),
    ("runs-on", "What infrastructure hosts or executes this?", False),
    ("tech", "What technology stack is it built with?", False),
    ("owned-by", "Who is responsible for this?", False),
    ("geography", "Where is this spatially or organisationally located?", False),
)
DEFAULT_ISA_DIMENSION = "type"
DEFAULT_ISPART_DIMENSION = "membership"


@cache
def english_words() -> tuple[str, ...]:
    """The shipped dictionary (festinger/data/english_words.txt; source and licence in its README)."""
    text = resources.files("festinger.data").joinpath("english_words.txt").read_text(encoding="utf-8")
    return tuple(word for word in (line.strip() for line in text.splitlines()) if word)


@transaction.atomic
def bootstrap_workspace(*, workspace, dictionary: bool = True) -> dict:
    """The seed dimensions and their roots exist in `workspace`, and (with `dictionary`) every
    dictionary word is a concept marked common. Existing concepts keep their counts; returns how
    many concepts and roots this call added."""
    before = Concept.objects.filter(workspace=workspace).count()
    for token, _question, is_isa in SEED_DIMENSIONS:
        dimension_ensure(workspace=workspace, token=token, is_isa=is_isa)
    roots = Edge.objects.filter(workspace=workspace, concept__token__in=[t for t, _, _ in SEED_DIMENSIONS])
    if dictionary:
        dictionary_load(workspace_id=workspace.pk, words=english_words())
    return {"concepts_added": Concept.objects.filter(workspace=workspace).count() - before,
            "dimension_roots": roots.count()}


def dictionary_load(*, workspace_id: int, words) -> None:
    """Every word is a common concept (saliency 0). One statement for the whole list; a word the
    workspace already has keeps its counts and becomes common unless the write path confirmed it."""
    table = Concept._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {table} (workspace_id, created_at, token, encounter_count, saliency, novelty, is_common)
                SELECT %s, now(), word, 0, 0, 0, true FROM unnest(%s::text[]) AS word
                ON CONFLICT (workspace_id, token) DO UPDATE SET is_common = true
                WHERE {table}.novelty = 0 AND NOT {table}.is_common""",
            [workspace_id, list(words)],
        )
        loaded = cursor.rowcount
    transaction.on_commit(lambda: _statistics_refresh(table=table, rows=loaded))


def _statistics_refresh(*, table: str, rows: int) -> None:
    """ANALYZE the table when the planner believes it holds fewer rows than were just loaded (never
    analysed, or analysed while it was empty): it would plan joins to it as for one row, and the admin's
    conflict list (four joins to concepts) then ran for minutes until autovacuum came round."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
        (known,) = cursor.fetchone()
        if known < rows:
            cursor.execute(f"ANALYZE {table}")


def dimension_ensure(*, workspace, token: str, is_isa: bool = False) -> Concept:
    """The concept `token` exists and is a dimension: its root edge (concept = parent = dimension)
    exists. Safe under concurrency (the inserts do nothing when another process won)."""
    Concept.objects.bulk_create([Concept(workspace=workspace, token=token)], ignore_conflicts=True)
    dimension = Concept.objects.get(workspace=workspace, token=token)
    root_ensure(dimension=dimension, is_isa=is_isa)
    return dimension


def root_ensure(*, dimension: Concept, is_isa: bool = False) -> None:
    """The dimension's root edge exists (one statement; nothing happens when it does already)."""
    Edge.objects.bulk_create(
        [Edge(workspace_id=dimension.workspace_id, concept=dimension, parent=dimension, dimension=dimension,
              is_isa=is_isa, confidence=1.0, last_confirmed=timezone.now(), source=Source.FESTINGER)],
        ignore_conflicts=True,
    )
