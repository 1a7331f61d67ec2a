"""Retrieval quality (issue 21): modes, fusion against its halves, the provenance cap, "nothing
found", the budget; through REST where a client would see it."""

from datetime import timedelta

import pytest

from lake.embedders import HashingEmbedder, LocalEmbedder
from lake.search import deltas_search
from lake.search.execute import Candidate
from lake.search.floor import vector_floor
from lake.search.rank import Tuning, fuse, leaning_vector_weight
from tests.lake.conftest import T0

TOPICS = {
    "rover": ["Priya calibrated the wheel encoders on the rover; drift now 2 cm per metre",
              "the rover lidar scanner dropped frames whenever the chassis motor stalled",
              "Tomasz replaced the rover gyroscope after the waypoint test failed",
              "battery of the rover sagged to 11 volts on the hill climb"],
    "bread": ["fed the sourdough starter with rye flour, doubled in six hours",
              "the dough proofing basket left a spiral on the crust",
              "Ingrid baked two loaves at 250 degrees; open crumb at last",
              "hydration at 78 percent made the dough too slack to shape"],
    "garden": ["planted tomato seedlings along the south trellis",
               "slugs ate half the lettuce bed overnight; set beer traps",
               "turned the compost heap and added the grass clippings",
               "Kwame fixed the greenhouse hose that split in the frost"],
    "taxes": ["filed the quarterly vat return with the accountant",
              "scanned every receipt into the expense spreadsheet",
              "the pension deduction was missing from the ledger",
              "Lucia chased the refund from last year's invoice"],
}
# question -> index into the flattened notes (the one delta that answers it)
QUESTIONS = {
    "fact": [("who calibrated the wheel encoders", 0), ("rye flour for the starter", 4),
             ("greenhouse hose split in the frost", 11), ("missing pension deduction", 14)],
    "paraphrase": [("calibrating an encoder on a wheel", 0), ("baking loaves at high degrees", 6),
                   ("planting seedlings of tomatoes", 8), ("receipts scanned into spreadsheets", 13)],
}


@pytest.fixture
def labelled(moments, provenance):
    return _labelled(moments, provenance)


@pytest.fixture(params=["hashing:hashing-v3", "hashing:hashing-v2", "local:all-MiniLM-L6-v2"])
def labelled_by_each_embedder(request, settings, moments, provenance):
    """The labelled lake embedded by the hashing fallback (its default model, then its previous
    one), then by the local semantic model."""
    settings.EMBEDDER, settings.EMBEDDING_MODEL = request.param.split(":")
    return _labelled(moments, provenance)


def _labelled(moments, provenance):
    notes = []
    for day, texts in enumerate(TOPICS.values()):
        made = moments(*texts, start=T0 + timedelta(days=day))
        notes += made
        # Each topic summarised twice over, as a working lake is: the provenance the cap keeps in proportion.
        provenance(f"{texts[0].split()[1]} work", made)
        provenance("a stretch of notes", made[:2], content="what happened over those days")
    return notes


def _recall(workspace, mode, notes, limit=2):
    scores = {}
    for kind, questions in QUESTIONS.items():
        found = 0
        for question, index in questions:
            result = deltas_search(workspace=workspace, query=question, mode=mode, limit=limit, depth="shallow")
            found += notes[index].id in {row.id for row in result.hits}
        scores[kind] = found / len(questions)
    return scores


def test_hybrid_is_never_below_the_better_of_its_halves(workspace, labelled_by_each_embedder):
    hybrid, vector, text = (_recall(workspace, mode, labelled_by_each_embedder) for mode in ("hybrid", "vector", "text"))

    for kind in QUESTIONS:
        assert hybrid[kind] >= max(vector[kind], text[kind]), (kind, hybrid, vector, text)
    assert hybrid["fact"] == 1.0


def test_a_long_log_holding_every_word_of_the_question_comes_before_short_notes_holding_some(workspace, moments):
    lines = [f"Checked the kiln shelf {i} and the glaze buckets; {name} logged the firing." for i, name in
             enumerate(["Ingrid", "Tomasz", "Amara", "Oskar", "Mei", "Idris"])]
    (log,) = moments("Log of the day. " + " ".join(lines[:3]) + " Priya measured the kiln thermocouple drift. "
                     + " ".join(lines[3:]))
    notes = moments("Priya measured the kiln", "the kiln thermocouple", "Priya and the thermocouple",
                    start=T0 + timedelta(hours=1))

    result = deltas_search(workspace=workspace, query="when did Priya measure the kiln thermocouple drift",
                           depth="shallow")

    # The log holds all five words, each short note two or three: as a whole vector the log is far
    # from the question, and reciprocal rank fusion let the short notes win on the vector half.
    assert [row.id for row in result.hits][:1] == [log.id]
    assert {note.id for note in notes} <= {row.id for row in result.hits}


def test_a_short_note_holding_every_word_comes_before_long_logs_repeating_some(workspace, moments):
    logs = moments(*[" ".join(f"The kiln thermocouple read {t} degrees at hour {h}." for h in range(12))
                     for t in (900, 950, 1000)])
    (note,) = moments("Priya measured the kiln thermocouple drift", start=T0 + timedelta(hours=1))

    result = deltas_search(workspace=workspace, query="Priya kiln thermocouple drift", mode="text", depth="shallow")

    # ts_rank_cd alone grows with every repetition: the logs outranked the note that answers.
    assert [row.id for row in result.hits][0] == note.id
    assert {row.id for row in result.hits[1:]} == {log.id for log in logs}
    assert result.hits[0].scores["text_rank"] >= 4  # it holds the four words


def test_provenance_takes_at_most_its_share_of_the_hits(api, moments, provenance, settings):
    moments(*[f"harbour crane inspection note {i}" for i in range(12)])
    # The stretches hold other moments: their constituents inherit half their score and rank below the notes.
    parts = moments(*[f"spare part list {i}" for i in range(11)], start=T0 + timedelta(days=1))
    stretches = [provenance(f"harbour crane inspection stretch {i}", parts[i:i + 2]) for i in range(10)]

    def provenance_hits(limit):
        body = api.post("/v1/search", {"query": "harbour crane inspection", "limit": limit, "depth": "shallow"},
                        format="json").json()
        hits = [row for row in body["rows"] if row["role"] == "hit"]
        return hits, [row for row in hits if "kind:provenance" in row["tags"]], body

    hits, capped, body = provenance_hits(10)
    assert len(hits) == 10 and len(capped) == 3  # FATHOM_SEARCH_PROVENANCE_SHARE 0.3 of 10
    assert any("provenance takes at most 30%" in warning for warning in body["warnings"])

    settings.SEARCH_PROVENANCE_SHARE = 0.5
    assert len(provenance_hits(10)[1]) == 5
    settings.SEARCH_PROVENANCE_SHARE = 1.0
    assert len(provenance_hits(10)[1]) > 5  # no cap: the summaries crowd the moments out (seed 000's rerank)
    assert len(stretches) == 10


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_the_cap_is_a_share_of_the_hits_returned_not_of_the_limit(api, moments, provenance, mode):
    notes = moments(*[f"quay gantry survey reading {i}" for i in range(4)])
    for i in range(6):
        provenance(f"quay gantry survey stretch {i}", notes[i % 4:i % 4 + 1])

    body = api.post("/v1/search", {"query": "quay gantry survey", "limit": 10, "depth": "shallow", "mode": mode},
                    format="json").json()
    hits = [row for row in body["rows"] if row["role"] == "hit"]

    # Four moments pass the floor, so of the five hits one (20%) is provenance, not three of seven (43%).
    assert sorted(row["id"] for row in hits if "kind:provenance" not in row["tags"]) == sorted(n.id for n in notes)
    assert len(hits) == 5
    assert any("provenance takes at most 30%" in warning for warning in body["warnings"])


@pytest.mark.parametrize("query", ["what do we have and what does it", "zqxv blorf wug", "the of and to in it"])
@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_stopword_only_and_nonsense_queries_find_nothing_and_say_so(api, labelled_by_each_embedder, query, mode):
    response = api.post("/v1/search", {"query": query, "mode": mode}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["rows"] == [] and body["nothing_found"]
    assert "nothing found:" in body["rendered"] and "0 hits" in body["rendered"]


def test_a_real_query_is_not_nothing(api, labelled):
    body = api.post("/v1/search", {"query": "sourdough starter"}, format="json").json()
    assert body["nothing_found"] is None and body["rows"][0]["role"] == "hit"


def test_a_misspelled_question_finds_its_note_through_the_vector_half(api, labelled):
    text = api.post("/v1/search", {"query": "sourdugh startr", "mode": "text"}, format="json").json()
    hybrid = api.post("/v1/search", {"query": "sourdugh startr"}, format="json").json()

    assert text["rows"] == []  # full text matches whole words: neither is in the lake
    moments = [row["id"] for row in hybrid["rows"] if row["role"] == "hit" and "kind:note" in row["tags"]]
    assert moments[0] == labelled[4].id  # found by hashing-v3's n-grams (a summary over it may rank above)


def test_the_budget_is_respected_and_what_it_left_out_is_reported(api, moments, provenance):
    long_tail = " and then a long account of what happened next, line after line" * 3
    notes = moments(*[f"kiln firing log {i}: glaze crawled on the mug{long_tail}" for i in range(30)])
    provenance("kiln firing week", notes[:6])

    unbounded = api.post("/v1/search", {"query": "kiln firing glaze", "limit": 10, "budget": 1_000_000},
                         format="json").json()
    body = api.post("/v1/search", {"query": "kiln firing glaze", "limit": 10, "budget": 1500}, format="json").json()

    assert len(unbounded["rendered"]) > 5000 and not unbounded["budget"]["left_out"]
    assert len(body["rendered"]) <= 1500 and body["budget"]["used"] == len(body["rendered"])
    assert body["budget"]["characters"] == 1500 and body["budget"]["rows_kept"] == len(body["rows"])
    kept = {row["id"] for row in body["rows"]}
    assert sum(body["budget"]["left_out"].values()) == len(unbounded["rows"]) - len(kept)
    assert not kept & set(body["budget"]["left_out_hits"])
    # Hits come before any context: what was kept is the best hits, and no context of a hit left out.
    hits = sorted((row for row in body["rows"] if row["role"] == "hit"), key=lambda row: row["rank"])
    assert [row["rank"] for row in hits] == list(range(1, len(hits) + 1))
    assert all(row["anchor_id"] in kept for row in body["rows"] if row["anchor_id"])
    assert "left out for the budget:" in body["rendered"]
    # The default budget (FATHOM_SEARCH_BUDGET_CHARS) applies when none is given.
    default = api.post("/v1/search", {"query": "kiln firing glaze"}, format="json").json()
    assert default["budget"]["characters"] == 6000 and len(default["rendered"]) <= 6000


def test_a_budget_that_holds_no_hit_says_so_rather_than_nothing_found(api, moments):
    moments(*[f"kiln firing log {i}: glaze crawled on the mug, a long account of the whole day" for i in range(5)])

    body = api.post("/v1/search", {"query": "kiln firing glaze", "limit": 3, "depth": "shallow", "budget": 200},
                    format="json").json()

    assert body["rows"] == [] and len(body["budget"]["left_out_hits"]) == 3
    assert body["nothing_found"] is None  # there are hits: the budget holds none of them
    assert "· 3 hits, 0 within the budget" in body["rendered"] and "no hit fits the budget" in body["rendered"]
    assert "nothing found" not in body["rendered"] and "left out for the budget: 3 hits" in body["rendered"]
    some = api.post("/v1/search", {"query": "kiln firing glaze", "limit": 3, "depth": "shallow", "budget": 600},
                    format="json").json()
    kept = sum(1 for row in some["rows"] if row["role"] == "hit")
    assert 0 < kept < 3 and f"· 3 hits, {kept} within the budget" in some["rendered"]


def test_a_filter_that_lets_nothing_through_is_named_as_the_reason(api, moments):
    moments("tidal turbine blade erosion survey")

    body = api.post("/v1/search", {"query": "tidal turbine", "filters": {"kind": "decision", "source": "nowhere"}},
                    format="json").json()

    assert body["rows"] == []
    assert body["nothing_found"] == "nothing in this lake matches the query within the filters (kind decision, source nowhere)"
    assert f"nothing found: {body['nothing_found']}" in body["rendered"]


def test_each_mode_through_rest(api, moments):
    (both,) = moments("tidal turbine blade erosion survey")
    (text_only,) = moments("tidal turbine notes", embed=False, start=T0 + timedelta(hours=1))

    def found(mode):
        body = api.post("/v1/search", {"query": "tidal turbine blade", "mode": mode, "depth": "shallow"},
                        format="json").json()
        assert body["mode"] == mode and body["plan"]["steps"][0]["mode"] == mode
        return {row["id"]: row["scores"]["found_by"] for row in body["rows"]}

    assert found("hybrid") == {both.id: ["vector", "text"], text_only.id: ["text"]}
    assert found("vector") == {both.id: ["vector"]}
    assert found("text") == {both.id: ["text"], text_only.id: ["text"]}


@pytest.mark.parametrize("body, field", [
    ({"query": "x", "mode": "semantic"}, "mode"),
    ({"query": "x", "budget": -5}, "budget"),
    ({"query": "x", "budget": 10}, "budget"),
    ({"query": "x", "budget": "lots"}, "budget"),
])
def test_bad_mode_or_budget_is_a_400_with_the_envelope(api, body, field):
    response = api.post("/v1/search", body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"} and error["message"].startswith(f"{field}:")


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_no_mode_shows_another_workspaces_deltas(api, other_workspace, api_client_for, moments, mode):
    moments("the secret orchard plan of workspace a")
    intruder = api_client_for(other_workspace, "owner")

    own = api.post("/v1/search", {"query": "secret orchard plan", "mode": mode}, format="json").json()
    theirs = intruder.post("/v1/search", {"query": "secret orchard plan", "mode": mode}, format="json").json()

    assert len(own["rows"]) == 1
    assert theirs["rows"] == [] and "workspace a" not in theirs["rendered"] and theirs["nothing_found"]


def test_the_openapi_schema_describes_the_search_request_and_response(client, db):
    schema = client.get("/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/v1/search"]["post"]
    components = schema["components"]["schemas"]

    request = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"query", "mode", "budget", "depth", "limit", "filters"} <= set(components[request]["properties"])
    assert {"mode", "nothing_found", "budget", "rendered", "rows"} <= set(components[response]["properties"])
    row = components["SearchRowOut"]["properties"]
    assert "scores" in row and "left_out_hits" in components["SearchBudgetOut"]["properties"]


def test_the_vector_floor_is_calibrated_for_each_embedder(settings):
    hashing = vector_floor(HashingEmbedder(384, model="hashing-v2"))
    ngrams = vector_floor(HashingEmbedder(384, model="hashing-v3"))
    local = vector_floor(LocalEmbedder(model="all-MiniLM-L6-v2", dimensions=384))

    # hashing-v2's floor was once calibrated by hand at 0.78; shared n-grams bring hashing-v3's
    # unrelated texts a little closer, and the semantic model's closer still.
    assert 0.75 < hashing < 0.83 and 0.70 < ngrams < hashing and 0.55 < local < 0.69


def test_a_weak_text_match_leans_fusion_on_the_vector_ranking():
    tuning = Tuning(vector_weight=0.25, text_weight=1.0, vector_max_distance=1.0, text_min_rank=0.0,
                    provenance_share=0.3)

    assert leaning_vector_weight(tuning, 1.0) == 0.25  # the best text match holds every word: as configured
    assert leaning_vector_weight(tuning, 0.0) == 1.0  # it holds none: the vector ranking weighs as much
    assert 0.25 < leaning_vector_weight(tuning, 0.5) < 1.0


def test_a_distance_beyond_the_floor_breaks_no_tie_between_equal_text_matches():
    tuning = Tuning(vector_weight=0.25, text_weight=1.0, vector_max_distance=0.6, text_min_rank=0.0,
                    provenance_share=0.3)

    def note(delta_id, hours, distance):
        # Both hold the same words of the query as well; neither is within the vector floor.
        return Candidate(id=delta_id, created_at=T0 + timedelta(hours=hours), source="notebook", tags=["kind:note"],
                         content="", media_hash="", summary_distance=distance, text_rank=2.08,
                         vector_steps={0}, text_steps={0}, step_distances={0: distance}, step_text_ranks={0: 2.08})

    older_but_nearer, newer = note("a1", 0, 0.7), note("b2", 1, 0.9)
    hybrid = fuse([older_but_nearer, newer], 1, tuning=tuning, words={0: 3})
    text = fuse([Candidate(**{**vars(c), "step_distances": {}, "summary_distance": None}) for c in (older_but_nearer, newer)],
                1, tuning=tuning, words={0: 3})

    # Beyond the floor a distance is no closer than unrelated text: hybrid keeps text mode's order (the newer first).
    assert [r.candidate.id for r in hybrid] == [r.candidate.id for r in text] == ["b2", "a1"]
    nearer = note("a1", 0, 0.5)  # within the floor: the vector half places it, and it comes first
    assert [r.candidate.id for r in fuse([nearer, newer], 1, tuning=tuning, words={0: 3})] == ["a1", "b2"]


def test_a_line_said_on_many_days_is_one_hit_and_leaves_room_for_the_turn_that_answers(api, moments):
    said = moments(*["Leo: Did you watch the match last night?"] * 8, step=60 * 24)
    answer = moments("Leo: I broke my wrist at the football match, the cast stays on for six weeks.",
                     start=T0 + timedelta(days=3, hours=1))[0]

    body = api.post("/v1/search", {"query": "did Leo watch the match", "limit": 3, "depth": "shallow"},
                    format="json").json()

    hits = [row for row in body["rows"] if row["role"] == "hit"]
    assert [row["id"] for row in hits if row["content"] == said[0].content] == [said[-1].id]  # once: the newest
    assert answer.id in {row["id"] for row in hits}
    assert "7 more matching moments repeat a better one's text word for word" in " ".join(body["warnings"])


def test_named_stretches_with_one_summary_all_stay_hits(api, moments, provenance, settings):
    settings.SEARCH_PROVENANCE_SHARE = 1.0  # no cap: what is counted is the repeats
    first, second = moments("kiln fired to cone six", "glaze crawled on the mug")
    stretches = [provenance("kiln week", [first], content="what happened in the studio"),
                 provenance("kiln week", [second], content="what happened in the studio")]

    body = api.post("/v1/search", {"query": "kiln week studio", "mode": "text", "depth": "shallow"},
                    format="json").json()

    hits = {row["id"] for row in body["rows"] if row["role"] == "hit"}
    assert {stretch.id for stretch in stretches} <= hits  # each holds its own moments
