"""Semantic recall with no key: a worker started with no key and no FATHOM_EMBEDDER embeds with the
local all-MiniLM-L6-v2 (the default when its package is installed), and a question that shares no
word with its note finds it through REST; GET /v1/lake/stats names the model."""

import uuid

import pytest

from lake.models import Delta
from tests.conftest import start_worker, stop_worker, wait_for, wait_for_worker

pytestmark = pytest.mark.worker

NOTES = [
    "Priya repaired the brake pads on her bicycle last Tuesday.",
    "The sourdough starter needs feeding twice a day.",
    "Booked the plumber for the leaking kitchen tap on Friday.",
    "Tomasz's flight to Lisbon lands at six in the evening.",
    "Renewed the home insurance policy; the premium went up by ten percent.",
]
QUESTION = "when did someone fix her bike?"  # no word in common with its note, stemmed or not


@pytest.fixture
def default_worker(transactional_db):
    """A worker of the memory queue configured as a fresh `make run` with no key is: no
    FATHOM_EMBEDDER, no embedding or OpenAI key (an empty variable counts as unset)."""
    name = f"local-{uuid.uuid4().hex[:6]}"
    process = start_worker(name, queues=["memory"], env={"FATHOM_EMBEDDER": "", "FATHOM_EMBEDDING_MODEL": "",
                                                         "FATHOM_EMBEDDING_API_KEY": "", "OPENAI_API_KEY": ""})
    try:
        wait_for_worker(name)
        yield name
    finally:
        stop_worker(process)


def test_with_no_key_a_paraphrased_question_finds_its_note(default_worker, workspace, api, settings):
    settings.EMBEDDER, settings.EMBEDDING_MODEL = "local", "all-MiniLM-L6-v2"  # this process as the worker is

    written = api.post("/v1/deltas", [{"content": text, "tags": ["kind:note"]} for text in NOTES], format="json")
    assert written.status_code == 201, written.content
    ids = [item["id"] for item in written.json()]
    wait_for(lambda: Delta.objects.filter(pk__in=ids, embedding__isnull=False).count() == len(ids), timeout=90)

    stats = api.get("/v1/lake/stats").json()
    hybrid = api.post("/v1/search", {"query": QUESTION}, format="json").json()
    text_only = api.post("/v1/search", {"query": QUESTION, "mode": "text"}, format="json").json()

    assert stats["embedder"] == {"name": "local:all-MiniLM-L6-v2", "dimensions": 384}
    assert stats["embedding_models"] == {"local:all-MiniLM-L6-v2": len(NOTES)}  # the worker's default embedder
    hits = [row for row in hybrid["rows"] if row["role"] == "hit"]
    assert hits and hits[0]["id"] == ids[0], [row["content"] for row in hits]
    assert [row for row in text_only["rows"] if row["role"] == "hit"] == []  # found by meaning, not by words
