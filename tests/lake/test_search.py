"""Search through REST: seed 000's retrieval stack with the hashing embedder."""

from datetime import timedelta

import pytest

from lake.models import Delta
from lake.search import Plan, Step, deltas_search
from lake.services import deltas_create, deltas_embed
from tests.lake.conftest import T0

NAVIER_STOKES = [
    "Navier-Stokes regularity: energy estimates for the 3D equations",
    "Worked through the Navier-Stokes blow-up criterion with vorticity bounds",
    "Stokes flow limit and the pressure term in the Navier equations",
    "Compared Leray weak solutions of Navier-Stokes with the strong ones",
]
NOISE = [
    "Rover software spike: wheel odometry drift", "Baked rye bread with a long ferment",
    "Quarterly tax paperwork for the studio", "Tuned the bass guitar and replaced strings",
    "Garden: planted tomatoes along the south fence", "Read about medieval trade routes",
    "Booked train tickets for the conference", "Cleaned the espresso machine",
]


def _search(api, query, **body):
    response = api.post("/v1/search", {"query": query, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _row(result, delta_id):
    return next((row for row in result["rows"] if row["id"] == delta_id), None)


def test_navier_stokes_a_provenance_whose_title_does_not_match_is_found_by_its_centroid(api, moments, provenance):
    """Seed 000: "navier stokes research" surfaces the L1 episode "Paper 3 Synthesis" through the
    centroid of its constituents, not through its own words."""
    moments(*NOISE, start=T0 - timedelta(days=3))
    constituents = moments(*NAVIER_STOKES)
    episode = provenance("Paper 3 Synthesis", constituents,
                         content="Drafting the third paper: what held up and what did not.")
    moments(*NOISE, start=T0 + timedelta(days=3))

    result = _search(api, "navier stokes research", depth="shallow", limit=5)

    row = _row(result, episode.id)
    assert row is not None and row["role"] == "hit", result["rendered"]
    scores = row["scores"]
    assert scores["matched_on"] == "centroid" and "centroid" in scores["found_by"]
    assert scores["centroid_distance"] < scores["summary_distance"]
    assert scores["distance"] == scores["centroid_distance"]
    assert f"prov · [L1 · 4 deltas · {episode.id}] Paper 3 Synthesis" in result["rendered"]

    # Without its centroid the same provenance is not found at all.
    Delta.objects.filter(pk=episode.pk).update(provenance_embedding=None)
    assert _row(_search(api, "navier stokes research", depth="shallow", limit=5), episode.id) is None


def test_expansion_pulls_children_down_one_hop_and_containers_up_three_levels(api, moments, provenance):
    moments(*NOISE)
    base = moments("spectral methods for the heat equation", "chebyshev collocation grid",
                   "finite volume scheme for shallow water", "riemann solver at cell faces",
                   start=T0 + timedelta(days=1))
    first = provenance("Spectral episode", base[:2])
    second = provenance("Finite volume episode", base[2:])
    topic = provenance("Numerical methods topic", [first, second])
    era = provenance("Winter of simulation era", [topic])
    beyond = provenance("A fourth level above everything", [era], level=4)

    # The one hit is a moment; it and its strip sit in two episodes, one topic, one era.
    up = _search(api, "chebyshev collocation", limit=1)
    assert [row["id"] for row in up["rows"] if row["role"] == "hit"] == [base[1].id]
    containers = {row["id"]: row for row in up["rows"] if row["role"] == "container"}
    assert set(containers) == {first.id, second.id, topic.id, era.id}, up["rendered"]
    assert beyond.id not in containers, "upward expansion stops at 3 levels"
    assert [containers[i]["depth"] for i in (first.id, topic.id, era.id)] == [1, 2, 3]
    assert base[1].id in containers[first.id]["contains"] and containers[era.id]["contains"] == [topic.id]
    assert up["rendered"].index("containers active in this recall:") < up["rendered"].index("▸ [")
    for container in (first, topic, era):
        assert f"· {container.id}] {container.title}" in up["rendered"]

    down = _search(api, "numerical methods topic", limit=1)
    assert _row(down, topic.id)["role"] == "hit"
    children = {row["id"] for row in down["rows"] if row["role"] == "child" and row["anchor_id"] == topic.id}
    assert children == {first.id, second.id}
    assert not any(row["role"] == "child" and row["anchor_id"] == topic.id and row["id"] in {b.id for b in base}
                   for row in down["rows"]), "downward expansion is one hop"
    assert f"↳ prov · [L1 · 2 deltas · {first.id}] Spectral episode" in down["rendered"]


def test_the_agents_own_containers_of_one_title_are_one_line_and_the_sources_stay_apart(api, moments, provenance):
    moments(*NOISE)
    (note,) = moments("the kiln reached cone six after nine hours", start=T0 + timedelta(days=1))
    markers = [provenance("How hot did the kiln get?", [note], level=0, tags=["kind:qa-marker"]) for _ in range(3)]
    episodes = [provenance("Pottery weekend", [note]) for _ in range(2)]  # two stretches a user named alike

    result = _search(api, "kiln cone six", limit=1)

    containers = {row["id"]: row for row in result["rows"] if row["role"] == "container"}
    newest = max(markers, key=lambda marker: (marker.created_at, marker.id))
    assert set(containers) == {newest.id} | {episode.id for episode in episodes}, result["rendered"]
    assert sorted(containers[newest.id]["alike"]) == sorted(m.id for m in markers if m != newest)
    assert result["rendered"].count("How hot did the kiln get?") == 1
    assert f"{newest.id}] How hot did the kiln get? (and 2 more alike) — holds [{note.id}]" in result["rendered"]
    assert all(containers[episode.id]["alike"] == [] for episode in episodes)


def test_valence_rerank_puts_provenance_then_qa_markers_above_equal_moments(api, moments, provenance, settings):
    settings.SEARCH_PROVENANCE_SHARE = 1.0  # the rerank alone: two provenance rows of four hits pass the cap
    unrelated = moments("entirely different words here")
    text = "orbital mechanics notebook"
    (moment,) = moments(text, start=T0 + timedelta(hours=1))
    (sediment,) = moments(text, tags=["kind:sediment", f"from:{unrelated[0].id}"], start=T0 + timedelta(hours=2))
    episode = provenance(text, unrelated)
    marker = provenance(text, unrelated, level=0, tags=["kind:qa-marker"])

    result = _search(api, "orbital mechanics", depth="shallow")

    hits = {row["id"]: row for row in result["rows"] if row["role"] == "hit"}
    assert {hits[i]["scores"]["rerank_factor"] for i in (episode.id, sediment.id)} == {0.85}
    assert hits[marker.id]["scores"]["rerank_factor"] == 0.92
    assert hits[moment.id]["scores"]["rerank_factor"] == 1.0
    for row in hits.values():
        scores = row["scores"]
        assert scores["reranked_distance"] == pytest.approx(scores["distance"] * scores["rerank_factor"], abs=1e-5)
    assert hits[moment.id]["scores"]["distance"] == pytest.approx(hits[episode.id]["scores"]["distance"], abs=1e-5)
    assert hits[moment.id]["scores"]["distance"] > 0.1
    ranks = {i: hits[i]["rank"] for i in (episode.id, sediment.id, marker.id, moment.id)}
    assert max(ranks[episode.id], ranks[sediment.id]) < ranks[marker.id] < ranks[moment.id]


def test_strips_show_the_neighbours_in_time_with_id_slugs(api, moments):
    deltas = moments("breakfast", "standup meeting", "debugged the flaky websocket test", "lunch", "code review")

    result = _search(api, "flaky websocket", limit=1)

    hit = deltas[2]
    neighbours = [row["id"] for row in result["rows"] if row["role"] == "neighbour"]
    assert neighbours == [deltas[0].id, deltas[1].id, deltas[3].id, deltas[4].id]
    assert f"▸ [{hit.id}] 2026-03-01 09:20 · chat · note · debugged the flaky websocket test" in result["rendered"]
    assert f"  [{deltas[1].id}] 2026-03-01 09:10 · chat · note · standup meeting" in result["rendered"]
    assert all(row["scores"]["found_by"] == ["strip"] for row in result["rows"] if row["role"] == "neighbour")


def test_every_hit_says_which_ranking_found_it(api, moments):
    (embedded,) = moments("quantum annealing schedule")
    (waiting,) = moments("quantum annealing hardware notes", embed=False, start=T0 + timedelta(hours=1))

    result = _search(api, "quantum annealing", depth="shallow")

    assert _row(result, embedded.id)["scores"]["found_by"] == ["vector", "text"]
    # Written a moment ago and not embedded yet: findable by text at once.
    assert _row(result, waiting.id)["scores"]["found_by"] == ["text"]
    assert _row(result, waiting.id)["scores"]["summary_distance"] is None


def test_a_selective_filter_still_returns_the_full_limit(api, moments):
    moments(*[f"sensor reading batch {i} from the north station" for i in range(60)])
    wanted = moments(*[f"sensor reading batch {i} from the south station" for i in range(12)],
                     tags=["kind:note", "station:south"], start=T0 + timedelta(days=1))

    result = _search(api, "sensor reading", depth="shallow", limit=10, filters={"tags": ["station:south"]})

    hits = [row["id"] for row in result["rows"] if row["role"] == "hit"]
    assert len(hits) == 10 and set(hits) <= {d.id for d in wanted}


def test_filters_by_kind_and_time_window(api, moments):
    moments("budget review meeting", tags=["kind:meeting"])
    (late,) = moments("budget review meeting", tags=["kind:meeting"], start=T0 + timedelta(days=10))
    moments("budget review notes", tags=["kind:note"], start=T0 + timedelta(days=10))

    since = (T0 + timedelta(days=5)).isoformat()
    result = _search(api, "budget review", depth="shallow", filters={"kind": "meeting", "since": since})

    assert [row["id"] for row in result["rows"] if row["role"] == "hit"] == [late.id]


def test_search_costs_a_constant_number_of_queries_whatever_the_result_size(
        api, workspace, moments, provenance, django_assert_num_queries):
    base = moments(*NAVIER_STOKES)
    episode = provenance("Paper 3 Synthesis", base)
    provenance("Research arc", [episode])
    moments(*NOISE)
    moments(*[f"stokes drift note {i}" for i in range(40)], start=T0 + timedelta(days=2))

    def search(limit, depth="normal"):
        return _search(api, "navier stokes", limit=limit, depth=depth, budget=1_000_000)

    search(1)  # the key's first use also records when it was last used

    # The key, the scan settings with the planner check, the step, the follow-up step, strips and
    # expansion together.
    with django_assert_num_queries(5):
        small = search(2)
    with django_assert_num_queries(5):
        large = search(40)
    with django_assert_num_queries(5):
        deep = search(40, "deep")
    # Shallow: no strips, no expansion.
    with django_assert_num_queries(4):
        search(40, "shallow")
    assert len([r for r in small["rows"] if r["role"] == "hit"]) == 2
    assert len([r for r in large["rows"] if r["role"] == "hit"]) == 40
    assert len(deep["rows"]) >= len(large["rows"]) > 3 * len(small["rows"])
    assert any(r["role"] == "container" for r in large["rows"])

    two_steps = Plan(steps=(Step(query="navier stokes"), Step(query="rover odometry")), source="given")
    with django_assert_num_queries(4):  # no key: the scan settings, two steps (no follow-up), strips and expansion
        deltas_search(workspace=workspace, query="navier stokes and rovers", plan=two_steps, limit=30)


def test_a_two_step_plan_fuses_both_steps(workspace, moments):
    (ns,) = moments(NAVIER_STOKES[0])
    (rover,) = moments(NOISE[0])
    moments(*NOISE[1:])

    plan = Plan(steps=(Step(query="navier stokes"), Step(query="rover odometry", mode="text")), source="given")
    result = deltas_search(workspace=workspace, query="navier stokes and rovers", plan=plan, depth="shallow", limit=2)

    assert {row.id for row in result.hits} == {ns.id, rover.id}
    assert result.plan.as_dict()["steps"][1] == {"query": "rover odometry", "mode": "text", "filters": {}}


def test_bad_search_input_is_refused_with_the_field(api):
    assert "query" in api.post("/v1/search", {"query": ""}, format="json").json()["error"]["message"]
    response = api.post("/v1/search", {"query": "x", "depth": "bottomless"}, format="json")
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("depth:")
    response = api.post("/v1/search", {"query": "x", "filters": {"since": "later"}}, format="json")
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("filters.since:")


def test_a_word_the_statistics_find_everywhere_leaves_the_full_text_step(api, moments, monkeypatch):
    from django.db import connection

    monkeypatch.setattr("lake.search.execute.COMMON_WORD_ROWS", 5)
    everywhere = moments(*[f"weather report {word}" for word in ("calm", "gusty", "humid", "foggy", "clear",
                                                                "stormy", "mild", "frosty")], embed=False)
    (glacier,) = moments("weather over the glacier camp", embed=False, start=T0 + timedelta(days=1))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE lake_delta")

    result = _search(api, "weather glacier", depth="shallow")

    assert [row["id"] for row in result["rows"] if row["role"] == "hit"] == [glacier.id]
    assert _row(result, glacier.id)["scores"]["found_by"] == ["text"]
    assert all(_row(result, delta.id) is None for delta in everywhere)
    # Below the threshold the same word is a match like any other.
    monkeypatch.setattr("lake.search.execute.COMMON_WORD_ROWS", 2000)
    assert len([row for row in _search(api, "weather glacier", depth="shallow")["rows"] if row["role"] == "hit"]) == 9


def test_the_agents_own_output_takes_one_of_each_five_hits_and_the_sources_keep_their_room(workspace):
    # given the agent's cards that repeat a question's words word for word, and the notes they came from
    echo = "where did the heron nest by the weir this spring"
    written = deltas_create(workspace=workspace, items=[
        *({"content": f"{echo}? the heron nested by the weir this spring ({i}) " + "and so on " * 40,
           "source": "harness", "tags": ["kind:card"]} for i in range(6)),
        *({"content": f"heron nest {i} spotted by the weir", "source": "notes"} for i in range(6))]).deltas
    deltas_embed(delta_ids=[d.id for d in written])
    # when it is searched with a small budget
    result = deltas_search(workspace=workspace, query=echo, limit=10, budget=1500)
    # then at most one of any five consecutive hits is the agent's, and every kept hit before it is a source
    hits = [row for row in [*result.rows, *result.budget.left_out] if row.role == "hit"]
    own = sorted(row.rank for row in hits if "kind:card" in row.tags)
    assert own and all(b - a >= 5 for a, b in zip(own, own[1:], strict=False)), own
    assert len([rank for rank in own if rank <= 5]) == 1
    # and the budget keeps the sources, leaving out the agent's long cards first
    assert {row.id for row in result.hits if row.source == "notes"} == {d.id for d in written[6:]}
    assert {row.id for row in result.budget.left_out} <= {d.id for d in written[:6]}
