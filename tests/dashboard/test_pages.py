"""The feed's filters and the list pages of their own (proposals, Festinger) through Django's test client:
what each filter keeps, the filter kept in every link, bad input refused with a 400 page (never a 500),
pages that cost the same queries whatever their size, and another workspace's rows never listed."""

from urllib.parse import quote

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fathom.llm import Message, complete
from festinger.models import ConflictStatus
from festinger.services import insert_fact
from harness.autonomy.models import AutonomyDecision
from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.runtime.services import message_send, session_create
from lake.services import delta_create
from proposals.models import ProposalStatus
from proposals.services import proposal_deny
from tests.dashboard.support import member, provenance_proposal
from tests.dashboard.test_dashboard import detected
from tests.dashboard.test_dashboard_live import logged_in_cookies, next_event
from tests.festinger.conftest import isa_isa_conflict

BAD_SEARCH = "100%_ <script>alert('x')</script> \"quoted\" \\ back"


@pytest.fixture
def operator(client, workspace):
    client.force_login(member(workspace))
    return client


@pytest.fixture
def mixed_feed(workspace):
    """An answered question, a running one, a Sit, a pending proposal and a denied one."""
    answered = fire_create(workspace=workspace, mode="reactive", question="where did the rover go?")
    Fire.objects.filter(pk=answered.pk).update(status="finished", response={"body": "North, past the crater."})
    running = fire_create(workspace=workspace, mode="reactive", question="what is the weather on Mars?")
    sit = fire_create(workspace=workspace, mode="self_directing", question="I keep thinking about the crater")
    pending = provenance_proposal(workspace, level=3, title="The rover era")
    denied = provenance_proposal(workspace, level=3, title="The weather era")
    proposal_deny(proposal=denied, decided_by="operator:user:test", reason="no")
    return {"answered": answered, "running": running, "sit": sit, "pending": pending, "denied": denied}


def shown(page: str, mixed: dict) -> set[str]:
    """The names of the mixed feed's entries the page shows."""
    ids = {"answered": f'id="fire-{mixed["answered"].pk}"', "running": f'id="fire-{mixed["running"].pk}"',
           "sit": f'id="fire-{mixed["sit"].pk}"', "pending": f'id="proposal-{mixed["pending"].pk}"',
           "denied": f'id="proposal-{mixed["denied"].pk}"'}
    return {name for name, marker in ids.items() if marker in page}


# --- the feed's filters ----------------------------------------------------------------------------

@pytest.mark.parametrize(("params", "expected"), [
    ({}, {"answered", "running", "sit", "pending", "denied"}),
    ({"kind": "answers"}, {"answered", "running"}),
    ({"kind": "sits"}, {"sit"}),
    ({"kind": "proposals"}, {"pending", "denied"}),
    ({"status": "pending"}, {"pending"}),
    ({"status": "finished"}, {"answered"}),
    ({"status": "running"}, {"running", "sit"}),
    ({"q": "ROVER"}, {"answered", "pending"}),
    ({"q": "crater"}, {"answered", "sit"}),  # an answer's text is searched too
    ({"kind": "answers", "q": "crater"}, {"answered"}),
    ({"kind": "proposals", "status": "denied"}, {"denied"}),
])
def test_the_feed_filters_by_kind_status_and_text(operator, mixed_feed, params, expected):
    response = operator.get("/", params)
    assert response.status_code == 200
    assert shown(response.content.decode(), mixed_feed) == expected


def test_a_filter_that_matches_nothing_says_so_and_offers_to_clear_it(operator, mixed_feed):
    page = operator.get("/", {"kind": "sits", "status": "pending"}).content.decode()
    assert shown(page, mixed_feed) == set()
    assert "No entry matches these filters" in page and 'class="clear-filters" href="/"' in page
    assert "Nothing yet: ask a question" not in page


def test_the_filter_is_kept_in_the_form_the_live_stream_and_the_older_entries_link(operator, workspace):
    for n in range(22):
        fire_create(workspace=workspace, mode="reactive", question=f"rover question {n}")
    page = operator.get("/", {"kind": "answers", "q": "rover"}).content.decode()
    assert '<option value="answers" selected>' in page and 'value="rover"' in page
    stream_url = page.split('sse-connect="', 1)[1].split('"', 1)[0]
    assert "&amp;kind=answers&amp;q=rover" in stream_url
    more = page.split('id="more"', 1)[1].split("</p>", 1)[0]
    assert "kind=answers&amp;q=rover" in more
    older = operator.get("/?" + more.split('href="/?', 1)[1].split('"', 1)[0].replace("&amp;", "&"))
    assert "rover question 0" in older.content.decode() and "rover question 21" not in older.content.decode()


def test_user_messages_waiting_for_a_turn_show_only_unfiltered(operator, workspace):
    message_send(session=session_create(workspace=workspace, title="s"), content="still waiting", author="ann")
    assert "still waiting" in operator.get("/").content.decode()
    assert "still waiting" not in operator.get("/", {"kind": "proposals"}).content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_live_stream_of_a_filtered_feed_sends_only_the_entries_that_match(live_server_url, workspace):
    cookies = logged_in_cookies(workspace)
    until = quote(timezone.now().isoformat())
    url = f"{live_server_url}/feed/stream?until={until}&proposals_after=0&kind=answers&q=rover"
    with httpx.Client(timeout=30, cookies=cookies) as client, client.stream("GET", url) as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        # what does not match: a proposal, a Sit, an answer about something else
        provenance_proposal(workspace, level=3, title="A rover era")
        fire_create(workspace=workspace, mode="self_directing", question="a rover on my mind")
        fire_create(workspace=workspace, mode="reactive", question="what is the weather?")
        first = fire_create(workspace=workspace, mode="reactive", question="where is the rover?")
        event = next_event(lines)
        assert event["event"] == "fire-new" and f'id="fire-{first.pk}"' in event["data"]
        second = fire_create(workspace=workspace, mode="reactive", question="and the ROVER now?")
        event = next_event(lines)  # not the proposal, which a page showing everything would have had
        assert event["event"] == "fire-new" and f'id="fire-{second.pk}"' in event["data"]


@pytest.mark.parametrize("params", [
    {"kind": "everything-else"}, {"status": "exploded"}, {"kind": "answers", "status": "??"},
    {"q": "x" * 201},
])
def test_a_bad_feed_filter_is_a_400_page_that_names_it(operator, mixed_feed, params):
    response = operator.get("/", params)
    assert response.status_code == 400 and "Bad filter" in response.content.decode()
    assert operator.get("/feed/stream", params).status_code == 400


def test_a_nul_character_in_a_search_is_a_400(operator, workspace):
    for path in ["/", "/feed/stream", "/proposals/", "/festinger/"]:
        assert operator.get(path, {"q": "a\x00b"}).status_code == 400, path  # the site's own guard


def test_odd_characters_in_a_search_are_searched_as_text_and_shown_escaped(operator, workspace):
    fire_create(workspace=workspace, mode="reactive", question=f"about {BAD_SEARCH}")
    fire_create(workspace=workspace, mode="reactive", question="about 100 percent")  # % is no wildcard
    page = operator.get("/", {"q": BAD_SEARCH}).content.decode()
    assert page.count('class="entry fire-entry') == 1 and "<script>alert" not in page
    assert operator.get("/", {"q": "%"}).status_code == 200


# --- the proposals page ----------------------------------------------------------------------------

def test_the_proposals_page_lists_pending_first_each_linking_to_its_page(operator, workspace):
    older_pending = provenance_proposal(workspace, level=3, title="An old era")
    denied = provenance_proposal(workspace, level=3, title="A wrong era")
    proposal_deny(proposal=denied, decided_by="operator:user:test", reason="no")
    auto = provenance_proposal(workspace, level=1, title="A small episode")  # approved at draft time
    page = operator.get("/proposals/").content.decode()
    order = [page.index(f'id="proposal-{p.pk}"') for p in (older_pending, denied, auto)]
    assert order[0] < min(order[1:])  # pending first, though the oldest
    assert f'href="/proposals/{older_pending.pk}"' in page and 'href="/proposals/"' in page  # and in the nav
    assert f'action="/proposals/{older_pending.pk}/approve"' in page  # decided inline
    assert f'action="/proposals/{denied.pk}/approve"' not in page
    assert 'aria-current="page">All <span class="count">3</span>' in page
    assert 'Pending <span class="count">1</span>' in page and 'Approved <span class="count">1</span>' in page


def test_the_proposals_page_filters_by_status_kind_and_text(operator, workspace):
    pending = provenance_proposal(workspace, level=3, title="The rover era")
    auto = provenance_proposal(workspace, level=1, title="A rover episode")
    page = operator.get("/proposals/", {"status": "pending"}).content.decode()
    assert f'id="proposal-{pending.pk}"' in page and f'id="proposal-{auto.pk}"' not in page
    page = operator.get("/proposals/", {"kind": "provenance", "q": "episode"}).content.decode()
    assert f'id="proposal-{pending.pk}"' not in page and f'id="proposal-{auto.pk}"' in page
    assert 'href="?status=pending&amp;kind=provenance&amp;q=episode"' in page  # the tabs keep the filter
    page = operator.get("/proposals/", {"kind": "routines"}).content.decode()
    assert "No proposal matches these filters" in page


def test_an_inline_decision_on_the_proposals_page_decides_through_the_service(operator, workspace):
    proposal = provenance_proposal(workspace, level=3)
    response = operator.post(f"/proposals/{proposal.pk}/approve", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Approved" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED
    assert f'id="proposal-{proposal.pk}"' in operator.get("/proposals/", {"status": "approved"}).content.decode()


def test_an_inline_decision_on_the_proposals_page_brings_its_tabs_counted_anew(operator, workspace):
    # given two proposals waiting, on the proposals page filtered to pending provenance ones
    waiting, other = provenance_proposal(workspace, level=3), provenance_proposal(workspace, level=3)
    on_page = "http://testserver/proposals/?status=pending&kind=provenance"
    assert 'Pending <span class="count">2</span>' in operator.get(on_page).content.decode()

    response = operator.post(f"/proposals/{waiting.pk}/deny", {"reason": "no"}, HTTP_HX_REQUEST="true",
                             HTTP_HX_CURRENT_URL=on_page).content.decode()

    # then the response swaps the tabs out of band, counted after the decision, the page's filter kept
    tabs = response[response.index('<nav class="status-tabs" id="proposal-status-tabs"'):]
    assert 'hx-swap-oob="true"' in tabs[:tabs.index(">")]
    assert 'Pending <span class="count">1</span>' in tabs and 'Denied <span class="count">1</span>' in tabs
    assert 'href="?status=approved&amp;kind=provenance"' in tabs and 'aria-current="page">Pending' in tabs
    # and a decision made elsewhere (the feed) brings no tabs
    response = operator.post(f"/proposals/{other.pk}/approve", HTTP_HX_REQUEST="true",
                             HTTP_HX_CURRENT_URL="http://testserver/").content.decode()
    assert f'id="proposal-{other.pk}"' in response and "proposal-status-tabs" not in response


def test_a_viewer_reads_the_proposals_and_festinger_pages_without_the_forms_that_act(client, workspace):
    client.force_login(member(workspace, username="viewer@example.com", role="viewer"))
    proposal = provenance_proposal(workspace, level=3)
    conflict = isa_isa_conflict(workspace)
    page = client.get("/proposals/").content.decode()
    assert f'id="proposal-{proposal.pk}"' in page and f'action="/proposals/{proposal.pk}/approve"' not in page
    page = client.get("/festinger/").content.decode()
    assert f'id="conflict-{conflict.pk}"' in page and f'action="/conflicts/{conflict.pk}/override"' not in page


@pytest.mark.parametrize("params", [{"status": "maybe"}, {"kind": "no-such-tool"}, {"q": "x" * 201}])
def test_a_bad_proposals_filter_is_a_400_page(operator, workspace, params):
    response = operator.get("/proposals/", params)
    assert response.status_code == 400 and "Bad filter" in response.content.decode()
    assert 'href="/proposals/"' in response.content.decode()


@pytest.mark.parametrize("number", ["999999999999999999999999", "-3", "abc", "1e400", "0"])
def test_an_odd_page_number_shows_a_page_never_an_error(operator, workspace, number):
    provenance_proposal(workspace, level=3)
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    assert operator.get("/proposals/", {"page": number}).status_code == 200
    assert operator.get("/festinger/", {"page": number}).status_code == 200


def test_the_proposals_page_costs_the_same_queries_for_two_proposals_or_twenty(operator, workspace,
                                                                              django_assert_num_queries):
    for n in range(2):
        provenance_proposal(workspace, level=3, title=f"era {n}")
    with CaptureQueriesContext(connection) as small:
        assert operator.get("/proposals/").status_code == 200
    for n in range(18):
        provenance_proposal(workspace, level=1 + n % 3, title=f"more {n}")
    with django_assert_num_queries(len(small.captured_queries)):
        assert operator.get("/proposals/").status_code == 200


# --- the Festinger page ------------------------------------------------------------------------------

def test_the_festinger_page_shows_the_world_model_searchable_by_concept_and_dimension(operator, workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    insert_fact(workspace=workspace, concept="gnommoweb", parent="team_alpha", dimension="ownership",
                is_isa=False, confidence=0.7, source="gutask")
    insert_fact(workspace=workspace, concept="rover", parent="vehicle", dimension="type", is_isa=True,
                confidence=0.8, source="gutask")
    page = operator.get("/festinger/").content.decode()
    assert 'href="/festinger/"' in page  # in the nav
    row = page.split('data-token="gnommoweb"', 1)[1].split("</tr>", 1)[0]
    assert "ISA</span> <code>repo</code> in [" in row and "ISPART</span> <code>team_alpha</code>" in row
    assert 'data-token="rover"' in page and '<option value="ownership">ownership (1)</option>' in page
    searched = operator.get("/festinger/", {"q": "GNOMMO"}).content.decode()
    assert 'data-token="gnommoweb"' in searched and 'data-token="rover"' not in searched
    by_parent = operator.get("/festinger/", {"q": "vehicle"}).content.decode()
    assert 'data-token="rover"' in by_parent and 'data-token="gnommoweb"' not in by_parent
    in_dimension = operator.get("/festinger/", {"dimension": "ownership"}).content.decode()
    assert 'data-token="gnommoweb"' in in_dimension and 'data-token="rover"' not in in_dimension
    nothing = operator.get("/festinger/", {"q": BAD_SEARCH}).content.decode()
    assert "No concept matches" in nothing and "<script>alert" not in nothing
    assert operator.get("/festinger/", {"dimension": "no such dimension"}).status_code == 200


def test_the_festinger_page_overrides_a_conflict_and_comes_back_to_itself(operator, workspace):
    conflict = isa_isa_conflict(workspace)
    page = operator.get("/festinger/", {"q": "gnommo"}).content.decode()
    assert f'action="/conflicts/{conflict.pk}/override"' in page
    assert '<input type="hidden" name="next" value="/festinger/?q=gnommo">' in page
    response = operator.post(f"/conflicts/{conflict.pk}/override", {"decision": "dismiss", "reasoning": "fine",
                                                                    "next": "/festinger/?q=gnommo"})
    assert response.status_code == 302 and response["Location"] == "/festinger/?q=gnommo"
    conflict.refresh_from_db()
    assert conflict.status == ConflictStatus.DISMISSED
    assert "None: every fact found its place." in operator.get("/festinger/").content.decode()


def test_the_festinger_page_lists_the_conversations_it_saw_linking_to_their_pages(operator, workspace, scripted_llm,
                                                                               festinger_knows):
    detected(workspace, "agent-zero-1")
    festinger_knows(workspace)
    scripted_llm.reply("It is a repo.")
    complete(workspace=workspace, role="proxy", messages=[Message.user("What is gnommoweb?")])
    page = operator.get("/festinger/").content.decode()
    assert 'href="/festinger/conversations/agent-zero-1"' in page
    assert page.count('class="conversation-row"') == 2  # the loop's and the recollection's
    for link in page.split('href="/festinger/conversations/')[1:]:
        assert operator.get("/festinger/conversations/" + link.split('"', 1)[0]).status_code == 200


def test_the_festinger_page_costs_the_same_queries_for_two_concepts_or_twenty(operator, workspace,
                                                                              django_assert_num_queries):
    isa_isa_conflict(workspace)
    detected(workspace, "agent-zero-1")
    with CaptureQueriesContext(connection) as small:
        assert operator.get("/festinger/").status_code == 200
    for n in range(18):
        insert_fact(workspace=workspace, concept=f"thing{n}", parent="repo", dimension=f"dim{n % 3}",
                    is_isa=True, confidence=0.9, source="gutask")
        detected(workspace, f"agent-{n}")
    with django_assert_num_queries(len(small.captured_queries)):
        assert operator.get("/festinger/").status_code == 200


# --- isolation -------------------------------------------------------------------------------------

def test_another_workspaces_rows_are_never_listed_and_its_ids_are_404(operator, workspace, other_workspace):
    theirs = provenance_proposal(other_workspace, level=3, title="Their secret era")
    conflict = isa_isa_conflict(other_workspace)
    fire_create(workspace=other_workspace, mode="reactive", question="their secret question")
    detected(other_workspace, "their-agent")
    provenance_proposal(workspace, level=3, title="Our era")
    for path, params in [("/", {}), ("/", {"q": "secret"}), ("/", {"kind": "proposals"}), ("/proposals/", {}),
                         ("/proposals/", {"q": "secret"}), ("/festinger/", {}), ("/festinger/", {"q": "gnommo"})]:
        page = operator.get(path, params).content.decode()
        assert "Their secret era" not in page and "their secret question" not in page, (path, params)
        assert "gnommoweb" not in page, (path, params)
        assert "their-agent" not in page and f"conflict-{conflict.pk}" not in page, (path, params)
    assert 'Pending <span class="count">1</span>' in operator.get("/proposals/").content.decode()
    assert operator.get(f"/proposals/{theirs.pk}").status_code == 404
    assert operator.post(f"/proposals/{theirs.pk}/approve").status_code == 404
    assert operator.post(f"/conflicts/{conflict.pk}/override", {"decision": "dismiss"}).status_code == 404
    assert operator.get("/festinger/conversations/their-agent").status_code == 404


def test_the_new_pages_send_a_logged_out_user_to_login(client, workspace):
    for path in ["/proposals/", "/festinger/", "/?kind=answers"]:
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), path


# --- the lake's and autonomy's live parts -------------------------------------------------------------

def test_the_lake_without_a_query_lists_its_newest_deltas_and_refreshes_them(operator, workspace, other_workspace):
    ours = delta_create(workspace=workspace, content="a note about the rover", tags=["kind:note"])
    delta_create(workspace=other_workspace, content="their private note", tags=["kind:note"])
    page = operator.get("/lake/").content.decode()
    assert f'href="/lake/{ours.pk}"' in page and "their private note" not in page
    assert 'hx-trigger="every 5s" hx-select="#lake-newest"' in page
    assert 'id="lake-newest"' not in operator.get("/lake/", {"q": "rover", "mode": "text"}).content.decode()


def test_the_autonomy_pages_decisions_refresh_themselves(operator, workspace):
    page = operator.get("/autonomy/").content.decode()
    assert 'id="autonomy-decisions"' in page and 'hx-select="#autonomy-decisions"' in page


def test_the_autonomy_pages_why_panel_refreshes_itself_every_5s_from_the_pressure_panels_partial(operator, workspace):
    # given autonomy on: the pressure panel shows why, and the page asks its partial for it every 5 s
    autonomy_settings_update(workspace=workspace, mode="on", threshold=1.0)
    page = operator.get("/autonomy/").content.decode()
    assert 'id="autonomy-why"' in page
    assert 'hx-get="/panels/pressure" hx-trigger="every 5s" hx-select="#autonomy-why" hx-swap="outerHTML"' in page

    autonomy_sweep()  # a decision made while the page is open

    # then the partial it polls holds the Why panel with that decision
    decision = AutonomyDecision.objects.filter(workspace=workspace).latest("created_at")
    partial = operator.get("/panels/pressure")
    why = partial.content.decode()[partial.content.decode().index('id="autonomy-why"'):]
    assert partial.status_code == 200 and (f'<li class="decision decision-{decision.action}" data-reason="{decision.reason}">'
                                         in why[:why.index("</section>")])
