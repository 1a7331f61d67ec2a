from datetime import UTC, datetime

import pytest

from lake.models import Delta, IdempotentWrite
from lake.services import deltas_embed


def _batch(n, prefix="moment"):
    return [{"content": f"{prefix} {i}", "tags": ["kind:note", f"n:{i}"], "source": "import",
             "created_at": f"2025-01-0{1 + i % 9}T10:00:00Z"} for i in range(n)]


def test_it_writes_one_delta_and_reads_it_back_by_prefix(api):
    response = api.post("/v1/deltas", {"content": "hello lake", "tags": ["kind:note"], "source": "chat"},
                        format="json")

    assert response.status_code == 201, response.content
    created = response.json()
    assert len(created["id"]) >= 12 and created["kinds"] == ["note"] and created["embedded"] is False
    fetched = api.get(f"/v1/deltas/{created['id'][:8].upper()}").json()
    assert fetched["id"] == created["id"] and fetched["content"] == "hello lake"
    assert fetched["parents"] == [] and fetched["children"] == []


def test_an_import_sets_the_moment(api):
    response = api.post("/v1/deltas", [{"content": "from the archive", "created_at": "2024-02-29T08:30:00+01:00"}],
                        format="json")

    assert response.status_code == 201
    assert Delta.objects.get(pk=response.json()[0]["id"]).created_at == datetime(2024, 2, 29, 7, 30, tzinfo=UTC)


def test_a_prefix_that_matches_several_deltas_is_refused_with_the_candidates(api, workspace):
    Delta.objects.create(workspace=workspace, id="abcdef0011111111", content="one")
    Delta.objects.create(workspace=workspace, id="abcdef0022222222", content="two")

    ambiguous = api.get("/v1/deltas/abcdef00")
    assert ambiguous.status_code == 400
    assert ambiguous.json()["error"]["code"] == "ambiguous_id"
    assert ambiguous.json()["error"]["details"]["candidates"] == ["abcdef0011111111", "abcdef0022222222"]
    assert api.get("/v1/deltas/abcdef001").json()["content"] == "one"
    short = api.get("/v1/deltas/abcdef0")
    assert short.status_code == 400 and "at least 8" in short.json()["error"]["message"]
    assert api.get("/v1/deltas/ffffffff").status_code == 404
    assert api.get("/v1/deltas/not-hex!").status_code == 400


def test_a_batch_error_names_the_item_and_the_field(api, workspace):
    items = _batch(3)
    items[1]["created_at"] = "yesterday-ish"

    response = api.post("/v1/deltas", items, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("items[1].created_at:")
    assert not Delta.objects.filter(workspace=workspace).exists()


def test_a_batch_over_the_limit_is_refused(api):
    response = api.post("/v1/deltas", [{"content": "x"}] * 1001, format="json")
    assert response.status_code == 400 and "at most 1000" in response.json()["error"]["message"]


def test_a_retried_batch_with_the_same_idempotency_key_writes_nothing_twice(api, workspace):
    items = _batch(5)

    first = api.post("/v1/deltas", items, format="json", HTTP_IDEMPOTENCY_KEY="import-2025-01")
    retry = api.post("/v1/deltas", items, format="json", HTTP_IDEMPOTENCY_KEY="import-2025-01")

    assert first.status_code == 201 and retry.status_code == 200
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert [d["id"] for d in retry.json()] == [d["id"] for d in first.json()]
    assert Delta.objects.filter(workspace=workspace).count() == 5
    assert IdempotentWrite.objects.filter(workspace=workspace).count() == 1

    changed = api.post("/v1/deltas", _batch(5, prefix="other"), format="json", HTTP_IDEMPOTENCY_KEY="import-2025-01")
    assert changed.status_code == 422 and changed.json()["error"]["code"] == "idempotency_key_reused"
    assert Delta.objects.filter(workspace=workspace).count() == 5


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


def _upload(client, data: bytes = PNG) -> str:
    response = client.post("/v1/media", data, content_type="application/octet-stream")
    assert response.status_code in (200, 201), response.content
    return response.json()["hash"]


def test_a_delta_names_an_image_this_workspace_uploaded(api, workspace):
    digest = _upload(api)

    response = api.post("/v1/deltas", {"content": "the harbour at dusk", "media_hash": digest.upper()}, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["media_hash"] == digest  # stored as the upload names it
    assert Delta.objects.get(workspace=workspace).media_hash == digest


@pytest.mark.parametrize(("media_hash", "message"), [
    ("0" * 64, "no image with this hash was uploaded to this workspace"),
    ("deadbeef", "the SHA-256 (64 hex characters) POST /v1/media answered"),
    ("../../etc/passwd", "the SHA-256 (64 hex characters) POST /v1/media answered"),
])
def test_a_delta_naming_an_image_never_uploaded_here_is_refused(api, workspace, media_hash, message):
    response = api.post("/v1/deltas", {"content": "x", "media_hash": media_hash}, format="json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["details"]["field"] == "media_hash" and message in error["message"]
    assert not Delta.objects.filter(workspace=workspace).exists()


def test_a_delta_may_not_name_another_workspaces_image(api, workspace, other_workspace, api_client_for):
    theirs = _upload(api_client_for(other_workspace))
    mine = _upload(api, PNG + b"mine")
    items = [{"content": "mine", "media_hash": mine}, {"content": "theirs", "media_hash": theirs}]

    single = api.post("/v1/deltas", items[1], format="json")
    batch = api.post("/v1/deltas", items, format="json")

    assert single.status_code == 400 and single.json()["error"]["details"]["field"] == "media_hash"
    assert batch.status_code == 400 and batch.json()["error"]["message"].startswith("items[1].media_hash:")
    assert batch.json()["error"]["details"] == {"item": 1, "field": "media_hash"}
    assert not Delta.objects.filter(workspace=workspace).exists()


def test_the_list_filters_by_tags_kind_source_and_time(api):
    api.post("/v1/deltas", _batch(6), format="json")
    api.post("/v1/deltas", {"content": "a task", "tags": ["kind:task"], "source": "chat",
                            "created_at": "2025-01-03T12:00:00Z"}, format="json")

    def contents(query):
        response = api.get(f"/v1/deltas?{query}")
        assert response.status_code == 200, response.content
        return [row["content"] for row in response.json()["results"]]

    assert contents("kind=task") == ["a task"]
    assert contents("tags=kind:note,n:2") == ["moment 2"]
    assert contents("source=chat") == ["a task"]
    assert contents("since=2025-01-03T00:00:00Z&until=2025-01-04T00:00:00Z") == ["a task", "moment 2"]
    assert api.get("/v1/deltas?since=soon").status_code == 400


def test_the_list_pages_by_cursor_in_a_constant_number_of_queries(api, django_assert_num_queries):
    api.post("/v1/deltas", _batch(9), format="json")
    api.post("/v1/deltas", _batch(300, prefix="bulk"), format="json")

    with django_assert_num_queries(2):  # the key, the page
        first = api.get("/v1/deltas?page_size=5").json()
    with django_assert_num_queries(2):
        second = api.get(first["next"]).json()
    with django_assert_num_queries(2):
        big = api.get("/v1/deltas?page_size=200&kind=note").json()
    with django_assert_num_queries(2):
        last = api.get("/v1/deltas?page_size=200&kind=note&tags=n:3").json()

    assert len(first["results"]) == 5 and len(second["results"]) == 5
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}
    assert len(big["results"]) == 200 and big["next"] is not None
    assert {r["content"] for r in last["results"]} == {"moment 3", "bulk 3"} and last["next"] is None


def test_a_delta_shows_its_provenance_parents_and_children(api, workspace, moments, provenance):
    base = moments("rover wheel odometry", "rover drift correction")
    episode = provenance("Rover software spike", base)

    child = api.get(f"/v1/deltas/{base[0].id}").json()
    parent = api.get(f"/v1/deltas/{episode.id}").json()

    assert [p["id"] for p in child["parents"]] == [episode.id]
    assert child["parents"][0]["level"] == 1 and child["parents"][0]["title"] == "Rover software spike"
    assert sorted(c["id"] for c in parent["children"]) == sorted(d.id for d in base)
    assert parent["level"] == 1 and parent["embedded"] is True


def test_viewers_read_and_search_but_do_not_write(workspace, api_client_for):
    viewer = api_client_for(workspace, "viewer")

    assert viewer.post("/v1/deltas", {"content": "nope"}, format="json").status_code == 403
    assert viewer.get("/v1/deltas").status_code == 200
    assert viewer.post("/v1/search", {"query": "anything"}, format="json").status_code == 200
    assert viewer.get("/v1/lake/stats").status_code == 200


def test_stats_count_this_workspace_only(api, workspace, other_workspace, moments, provenance):
    base = moments("alpha", "beta", "gamma")
    moments("pending", embed=False)
    provenance("Greek letters", base)
    moments("elsewhere", target=other_workspace)

    stats = api.get("/v1/lake/stats").json()

    assert stats["deltas"] == 5 and stats["embedded"] == 4 and stats["awaiting_embedding"] == 1
    assert stats["provenance"] == 1 and stats["provenance_with_centroid"] == 1
    assert stats["provenance_by_level"] == {"1": 1}
    assert stats["kinds"] == {"note": 4, "provenance": 1}
    assert stats["embedder"] == {"name": "hashing:hashing-v3", "dimensions": 384}


def test_search_never_shows_another_workspaces_deltas(api, workspace, other_workspace, api_client_for, moments):
    moments("the secret plan of workspace a", "more about the secret plan")
    intruder = api_client_for(other_workspace, "owner")

    own = api.post("/v1/search", {"query": "secret plan"}, format="json").json()
    theirs = intruder.post("/v1/search", {"query": "secret plan"}, format="json").json()

    assert len([r for r in own["rows"] if r["role"] == "hit"]) == 2
    assert theirs["rows"] == [] and "workspace a" not in theirs["rendered"]
    assert intruder.get("/v1/lake/stats").json()["deltas"] == 0


def test_a_delta_too_long_for_the_text_index_is_stored_and_found_by_its_vector_and_its_beginning(api, settings):
    """A megabyte of distinct words (a tsvector holds at most 1 MB) is written, found by vector, and
    by text through the prefix the text index reads."""
    words = [f"w{index:x}q{index * 7919 % 100_003:x}" for index in range(90_000)]
    content = "zanzibarite " + " ".join(words)
    assert len(content.encode()) > 1_000_000

    response = api.post("/v1/deltas", {"content": content, "tags": ["kind:note"]}, format="json")

    assert response.status_code == 201, response.content[:500]
    delta_id = response.json()["id"]
    assert Delta.objects.get(pk=delta_id).content == content
    assert deltas_embed(delta_ids=[delta_id]) == 1
    # a short query is far from a megabyte of words in the hashing embedder's space: any nearness counts here
    settings.SEARCH_VECTOR_MAX_DISTANCE = 1.0

    def found(query, mode):  # a hit, kept in the rendered recall or left out for its length
        result = api.post("/v1/search", {"query": query, "mode": mode}, format="json").json()
        return [row["id"] for row in result["rows"]] + result["budget"]["left_out_hits"]

    assert delta_id in found("zanzibarite", "text")
    assert delta_id in found(content[:3000], "vector")
    assert delta_id not in found(words[-1], "text")  # past the prefix: the vector's to find
