"""Q/A marker dedup: markers asking the same question fold into one level-1 provenance through the
gate, once; folded markers stop pressing; and in search, markers never take more than
FATHOM_SEARCH_PROVENANCE_SHARE of the top k (the provenance cap they fall under)."""

from django.conf import settings
from django.utils import timezone

from harness.autonomy.dedup import PRODUCER, markers_dedup
from harness.autonomy.pressure import pressure_read
from harness.autonomy.services import autonomy_settings_get
from lake.models import Delta
from lake.search import deltas_search
from lake.services import delta_create, deltas_embed, provenance_create
from proposals.models import Proposal


def marker(workspace, question, moment):
    return provenance_create(workspace=workspace, title=question, child_ids=[moment.id], level=0,
                             content=f"Q: {question}\n\nA: the rover crossed the dune", tags=["kind:qa-marker"])


def test_markers_on_the_same_question_fold_into_one_episode_once(workspace):
    moment = delta_create(workspace=workspace, content="the rover crossed the dune at dawn")
    same = [marker(workspace, q, moment) for q in ("What did the rover do?", "what did the  rover do?",
                                                   "What did the rover do?")]
    marker(workspace, "Where is the lake?", moment)
    settings_row = autonomy_settings_get(workspace=workspace)
    assert pressure_read(settings=settings_row, day_start=timezone.now()).breakdown["duplicate_markers"]["raw"] == 2
    [proposal] = markers_dedup(workspace=workspace)
    assert (proposal.status, proposal.level, proposal.producer) == ("approved", 1, PRODUCER)
    episode = Delta.objects.get(pk=proposal.result_ref.removeprefix("delta:"))
    assert set(episode.from_ids) == {m.id for m in same} and episode.title == "Asked 3 times: what did the rover do?"
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:proposal", f"proposal:{proposal.pk}"]).exists()
    assert Delta.objects.filter(workspace=workspace, tags__contains=["kind:decision", f"proposal:{proposal.pk}"]).exists()
    assert pressure_read(settings=settings_row, day_start=timezone.now()).breakdown["duplicate_markers"]["raw"] == 0
    assert markers_dedup(workspace=workspace) == []  # folded markers are not folded again
    assert Proposal.objects.filter(workspace=workspace, producer=PRODUCER).count() == 1


def test_in_search_markers_take_at_most_the_provenance_share_of_the_top_k(workspace):
    moments = [delta_create(workspace=workspace, content=f"the rover crossed the dune, log {i}") for i in range(6)]
    for i in range(6):
        marker(workspace, "What did the rover do on the dune?", moments[i])
    deltas_embed(delta_ids=list(Delta.objects.filter(workspace=workspace).values_list("id", flat=True)))
    limit = 5
    hits = deltas_search(workspace=workspace, query="rover dune", limit=limit).rows
    top = [row for row in hits if row.role == "hit"]
    markers = [row for row in top if "kind:qa-marker" in row.tags]
    assert len(top) == limit
    assert len(markers) <= max(1, int(settings.SEARCH_PROVENANCE_SHARE * limit))


def test_markers_of_machine_triggers_are_no_question_and_never_folded(workspace):
    moment = delta_create(workspace=workspace, content="the rover crossed the dune at dawn")
    for _ in range(8):
        marker(workspace, "[Heartbeat] every 60s", moment)
    assert markers_dedup(workspace=workspace) == []
    assert not Proposal.objects.filter(workspace=workspace).exists()
