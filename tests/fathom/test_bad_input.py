"""Bad input never gives a 5xx, and every error is the JSON envelope: each bad input sent to every
endpoint it applies to."""

import json

import pytest
from django.middleware.csrf import _get_failure_view
from django.test import RequestFactory, override_settings

from fathom.api import errors
from fathom.api.parsers import MAX_JSON_DEPTH
from fathom.llm.services import model_create
from harness.fires.services import fire_create
from harness.runtime import profiles
from lake import api as lake_api

pytestmark = pytest.mark.django_db

# (method, path) of every endpoint that parses a JSON body; {session}, {agent}, {user}, {fire} are filled in.
JSON_BODY_ENDPOINTS = [
    ("post", "/v1/apikeys"),
    ("post", "/v1/deltas"),
    ("post", "/v1/search"),
    ("post", "/v1/festinger/iknowthat"),
    ("post", "/v1/festinger/conflicts/1/resolve"),
    ("post", "/v1/festinger/conflicts/1/dismiss"),
    ("post", "/v1/proposals/draft"),
    ("post", "/v1/proposals/1/approve"),
    ("post", "/v1/proposals/1/deny"),
    ("post", "/v1/sessions"),
    ("post", "/v1/sessions/{session}/messages"),
    ("post", "/v1/sessions/{session}/sit"),
    ("post", "/v1/sessions/{session}/schedules"),
    ("post", "/v1/introspect"),
    ("post", "/v1/profiles/agents"),
    ("post", "/v1/profiles/users"),
    ("patch", "/v1/profiles/agents/{agent}"),
    ("patch", "/v1/profiles/users/{user}"),
    ("post", "/v1/runs"),
    ("put", "/v1/autonomy/settings"),
    ("post", "/v1/autonomy/inbox/{directive}"),
    ("post", "/v1/producers/topical/run"),
    ("post", "/v1/fires/{fire}/feedback"),
    ("post", "/v1/llm/models"),
    ("patch", "/v1/llm/models/{model}"),
    ("post", "/v1/llm/models/{model}/test"),
    ("put", "/v1/llm/roles/main"),
    ("patch", "/v1/quality/settings"),
]
OBJECT_BODY_ENDPOINTS = [(method, path) for method, path in JSON_BODY_ENDPOINTS if path != "/v1/deltas"]

LIST_ENDPOINTS = ["/v1/apikeys", "/v1/deltas", "/v1/traces", "/v1/proposals", "/v1/festinger/conflicts",
                  "/v1/sessions", "/v1/sessions/{session}/messages", "/v1/fires", "/v1/profiles/agents",
                  "/v1/profiles/users",
                  "/v1/sessions/{session}/tasks", "/v1/profiles/agents/{agent}/history",
                  "/v1/profiles/users/{user}/history", "/v1/runs",
                  "/v1/autonomy/decisions", "/v1/autonomy/status", "/v1/autonomy/inbox", "/v1/autonomy/directives",
                  "/v1/festinger/loops", "/v1/sessions/{session}/schedules", "/v1/quality/feedback"]

QUERY_PARAMETERS = [("/v1/traces", "actor_id"), ("/v1/traces", "run_id"), ("/v1/deltas", "source"),
                    ("/v1/deltas", "tags"), ("/v1/proposals", "tool"), ("/v1/festinger/conflicts", "concept"),
                    ("/v1/fires", "session"), ("/v1/festinger/recollection", "text"), ("/v1/usage", "from"),
                    ("/v1/autonomy/decisions", "reason"), ("/v1/autonomy/inbox", "state"),
                    ("/v1/festinger/loops", "session"), ("/v1/festinger/loops", "kind")]

PATH_PARAMETERS = ["/v1/traces/{bad}", "/v1/media/{bad}", "/v1/deltas/{bad}", "/v1/sessions/{bad}",
                   "/v1/sessions/{bad}/events", "/v1/fires/{bad}", "/v1/profiles/agents/{bad}",
                   "/v1/festinger/conflicts/{bad}",
                   "/v1/tasks/{bad}", "/v1/sessions/{bad}/tasks",
                   "/v1/profiles/users/{bad}/history", "/v1/runs/{bad}", "/v1/runs/{bad}/graph",
                   "/v1/runs/{bad}/events", "/v1/producer-runs/{bad}", "/v1/deltas/{bad}/why",
                   "/v1/sessions/{bad}/schedules", "/v1/schedules/{bad}", "/v1/llm/models/{bad}"]

UNSTORABLE = {"nul": "a\u0000b", "lone surrogate": "a\ud800b"}


@pytest.fixture
def owner(workspace, api_client_for):
    return api_client_for(workspace, "owner")


@pytest.fixture
def targets(owner, workspace):
    session = owner.post("/v1/sessions", {}, format="json").json()["id"]
    profiles.agent_profile_create(workspace=workspace, slug="scout", name="Scout")
    profiles.user_profile_create(workspace=workspace, slug="ada", name="Ada")
    directive = owner.post("/v1/deltas", {"content": "look into it", "tags": ["kind:directive"]},
                           format="json").json()["id"]
    fire = fire_create(workspace=workspace, mode="introspective", question="a finished fire")
    model_create(workspace=workspace, name="house", provider="openai-compatible", model="m",
                 base_url="http://127.0.0.1:9/v1")
    return {"session": session, "agent": "scout", "user": "ada", "directive": directive, "fire": str(fire.pk),
            "model": "house"}


def send(client, method, path, body: bytes, **extra):
    return getattr(client, method)(path, data=body, content_type="application/json", **extra)


def assert_envelope(response, *statuses):
    assert response.status_code in statuses, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["code"], str) and body["error"]["message"]
    return body["error"]


# --- bodies -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "path"), JSON_BODY_ENDPOINTS)
def test_a_body_nested_ten_thousand_levels_is_a_400_not_a_recursion_error(owner, targets, method, path):
    body = ("[" * 10_000 + "]" * 10_000).encode()
    error = assert_envelope(send(owner, method, path.format(**targets), body), 400)
    assert f"deeper than {MAX_JSON_DEPTH}" in error["message"]


@pytest.mark.parametrize("body", [
    "[" * 100 + '"' + '\\"' * 1_000_000,  # a string left open, its quotes escaped: each one a place to start
    "[" * 100 + '"x",' * 500_000,
])
def test_scanning_the_nesting_stays_linear_on_hostile_bodies(owner, body):
    assert_envelope(send(owner, "post", "/v1/search", body.encode()), 400)


def test_nesting_up_to_the_limit_is_accepted(owner):
    payload = {"nested": 1}
    for _ in range(MAX_JSON_DEPTH - 2):
        payload = {"n": payload}
    response = owner.post("/v1/proposals/draft", {"tool": "note", "title": "deep", "payload": payload},
                          format="json")
    assert response.status_code != 400 or "deeper" not in response.json()["error"]["message"], response.content


def test_brackets_inside_strings_do_not_count_as_nesting(owner):
    content = "[" * 5000 + "{" * 5000
    response = owner.post("/v1/deltas", {"content": content}, format="json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("kind", UNSTORABLE)
@pytest.mark.parametrize(("method", "path"), JSON_BODY_ENDPOINTS)
def test_unstorable_text_in_a_body_is_a_400(owner, targets, method, path, kind):
    text = UNSTORABLE[kind]
    body = {"content": text, "query": text, "name": text, "fact": text, "title": text, "prompt": text,
            "question": text, "reason": text, "tool": text, "slug": text, "role": "viewer", "memory": text,
            "decision": text, "payload": {"x": text}, "preferences": {"tone": text}, "objective": text}
    error = assert_envelope(send(owner, method, path.format(**targets), json.dumps(body).encode()), 400)
    assert "NUL" in error["message"]


@pytest.mark.parametrize("kind", UNSTORABLE)
@pytest.mark.parametrize("profile", ["users", "agents"])
def test_unstorable_text_in_profile_preferences_or_a_key_is_a_400(owner, targets, profile, kind):
    text = UNSTORABLE[kind]
    for body in ({"slug": "x", "preferences": {"tone": text}}, {"slug": "x", "preferences": {text: "warm"}}):
        assert_envelope(send(owner, "post", f"/v1/profiles/{profile}", json.dumps(body).encode()), 400)
    slug = targets["user" if profile == "users" else "agent"]
    body = json.dumps({"preferences": {"tone": text}, "memory": text}).encode()
    assert_envelope(send(owner, "patch", f"/v1/profiles/{profile}/{slug}", body), 400)


@pytest.mark.parametrize("body", [b"false", b"0", b"true", b"null", b"[]", b"[1, 2]", b'"a string"', b"12.5"])
@pytest.mark.parametrize(("method", "path"), OBJECT_BODY_ENDPOINTS)
def test_a_body_that_is_not_an_object_is_a_400(owner, targets, method, path, body):
    assert_envelope(send(owner, method, path.format(**targets), body), 400)


@pytest.mark.parametrize("body", [b"false", b"0", b'"a string"', b"[1]", b"[[]]", b"{", b"NaN", b"\xff\xfe"])
def test_deltas_reject_what_is_neither_an_object_nor_a_list_of_objects(owner, body):
    assert_envelope(send(owner, "post", "/v1/deltas", body), 400)


@pytest.mark.parametrize(("method", "path"), JSON_BODY_ENDPOINTS)
def test_a_body_that_is_not_json_is_a_400_or_415(owner, targets, method, path):
    assert_envelope(send(owner, method, path.format(**targets), b"{not json"), 400)
    form = getattr(owner, method)(path.format(**targets), data="a=1", content_type="application/x-www-form-urlencoded")
    assert_envelope(form, 415)


@override_settings(FATHOM_API_MAX_BODY_BYTES=64 * 1024)
@pytest.mark.parametrize(("method", "path"), JSON_BODY_ENDPOINTS)
def test_a_body_over_the_limit_is_a_413_naming_the_limit(owner, targets, method, path):
    body = json.dumps({"content": "x" * 70 * 1024}).encode()
    error = assert_envelope(send(owner, method, path.format(**targets), body), 413)
    assert "65,536 bytes" in error["message"]


def test_the_documented_batch_of_a_thousand_ordinary_deltas_fits(owner):
    batch = [{"content": f"moment {i}: " + "a sentence of an ordinary note, " * 100, "tags": ["kind:note"]}
             for i in range(1000)]
    body = json.dumps(batch).encode()
    assert len(body) > 3 * 1024 * 1024  # more than Django's default 2.5 MB
    response = send(owner, "post", "/v1/deltas", body)
    assert response.status_code == 201, response.content[:300]
    assert len(response.json()) == 1000


def test_a_batch_over_a_thousand_is_a_400(owner):
    error = assert_envelope(send(owner, "post", "/v1/deltas", json.dumps([{"content": "x"}] * 1001).encode()), 400)
    assert "1000" in error["message"]


# --- query strings and paths --------------------------------------------------------------------------

@pytest.mark.parametrize("raw", ["%00", "a%00b", "%ED%A0%80"])
@pytest.mark.parametrize(("path", "parameter"), QUERY_PARAMETERS)
def test_unstorable_text_in_a_query_parameter_is_a_400(owner, path, parameter, raw):
    response = owner.get(f"{path}?{parameter}={raw}")
    if raw == "%ED%A0%80":  # not UTF-8: Django decodes it to U+FFFD, which is storable text
        assert response.status_code < 500
        return
    assert_envelope(response, 400)


@pytest.mark.parametrize("path", PATH_PARAMETERS)
def test_nul_in_a_path_parameter_is_a_4xx(owner, path):
    assert_envelope(owner.get(path.format(bad="%00")), 400, 404)
    assert_envelope(owner.get(path.format(bad="a%00b")), 400, 404)


def test_nul_in_the_traces_path_and_media_path_is_a_400(owner):
    for path in ("/v1/traces/%00", "/v1/media/%00", "/v1/traces?actor_id=%00", "/v1/traces?run_id=%00"):
        assert_envelope(owner.get(path), 400)


def test_too_many_query_fields_is_a_json_400(owner):
    query = "&".join(f"f{i}=1" for i in range(1100))
    assert_envelope(owner.get(f"/v1/deltas?{query}"), 400)


@pytest.mark.parametrize("path", ["/v1/proposals/abc", "/v1/apikeys/x/revoke", "/v1/festinger/conflicts/1e3",
                                  "/v1/festinger/resolve/runs/-1", "/v1/profiles/agents/not a slug",
                                  "/v1/no-such-endpoint", "/nowhere"])
def test_a_path_no_route_matches_is_a_json_404(owner, path):
    assert_envelope(owner.get(path), 404)


@pytest.mark.parametrize("path", ["/v1/proposals/99999999999999999999999", "/v1/festinger/conflicts/9223372036854775808",
                                  "/v1/festinger/resolve/runs/99999999999999999999"])
def test_an_id_beyond_the_column_range_is_a_404(owner, path):
    assert_envelope(owner.get(path), 404)


# --- pagination ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", LIST_ENDPOINTS)
def test_an_invalid_cursor_is_a_400(owner, targets, path):
    error = assert_envelope(owner.get(path.format(**targets) + "?cursor=not-a-cursor"), 400)
    assert "cursor" in error["details"]


@pytest.mark.parametrize("size", ["-1", "0", "abc", "", "1.5"])
@pytest.mark.parametrize("path", LIST_ENDPOINTS)
def test_a_page_size_that_is_not_a_positive_integer_is_a_400(owner, targets, path, size):
    error = assert_envelope(owner.get(path.format(**targets) + f"?page_size={size}"), 400)
    assert "page_size" in error["details"]


def test_a_page_size_above_the_maximum_is_cut_to_it(owner):
    assert owner.get("/v1/deltas?page_size=100000").status_code == 200


# --- Django's own error pages -------------------------------------------------------------------------

@pytest.mark.parametrize(("handler", "status"), [(errors.bad_request, 400), (errors.permission_denied, 403),
                                                 (errors.page_not_found, 404)])
def test_djangos_error_views_answer_the_envelope_under_v1(handler, status):
    request = RequestFactory().get("/v1/anything")
    assert_envelope(handler(request, Exception("why")), status)


def test_a_crash_answers_a_json_500_under_v1_and_html_in_the_admin():
    response = errors.server_error(RequestFactory().get("/v1/deltas"))
    assert response.status_code == 500 and json.loads(response.content)["error"]["code"] == "server_error"
    admin = errors.server_error(RequestFactory().get("/admin/"))
    assert admin.status_code == 500 and admin["Content-Type"].startswith("text/html")


def test_an_unhandled_exception_in_a_view_is_a_json_500(owner, monkeypatch):
    def explode(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(lake_api, "lake_stats", explode)
    owner.raise_request_exception = False
    response = owner.get("/v1/lake/stats")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"


def test_a_csrf_failure_is_json_under_v1_and_html_in_the_admin():
    assert _get_failure_view() is errors.csrf_failure
    assert_envelope(errors.csrf_failure(RequestFactory().post("/v1/deltas"), reason="no token"), 403)
    assert errors.csrf_failure(RequestFactory().post("/admin/login/"), reason="no token")["Content-Type"].startswith(
        "text/html")
