"""The operator dashboard through Django's test client: login, workspaces and their isolation, the
feed and its query count, the thinking accordion, deciding proposals and conflicts, onboarding."""

import html
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard import stream
from dashboard.feed import feed_page
from fathom.llm import Message, complete
from fathom.llm.models import LLMModel, ModelAssignment
from fathom.models import ApiKey, Membership, Workspace
from fathom.tracing.models import TraceEvent
from festinger.loops.guard import loop_events_record
from festinger.models import ConflictStatus, Edge
from festinger.recollection import RECOLLECTION_EVENT
from harness.autonomy.models import AutonomySettings, InboxMark, PressureSample
from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from harness.conductor.services import run_create
from harness.fires.models import Fire
from harness.fires.services import fire_create
from harness.quality.models import Feedback, QualityAttempt, QualityRun
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, session_create
from lake.models import Delta
from lake.services import delta_create
from proposals.models import Decision, ProposalStatus
from tests.dashboard.support import (
    PASSWORD,
    background_task,
    fire_with_tools,
    member,
    provenance_proposal,
    stuck_agent,
)
from tests.festinger.conftest import isa_isa_conflict
from tests.harness.tool_fire import run_tools

# The feed page's queries, whatever its size: the session and the user, the memberships, the fires, their
# turns and their tool calls, their traces' totals, their quality runs with their attempts and their thumbs, the proposals and
# their decisions, the side panels (pending proposals and
# their decisions, pending conflicts, the loop detector's conversations, the latest recollections, the inbox,
# the pressure panel's settings, reading (two), series, latest decisions and producer runs, the directives, the conductor's runs, active
# background tasks), the recollections and the background tasks of the page's fires, the user messages
# still waiting for a turn, and the newest proposal id (where the live stream starts).
FEED_QUERIES = 31
# A conversation's page: the session and the user, the memberships, its loop events, its recollections.
CONVERSATION_QUERIES = 5


def judged(fire):
    """The fire as the quality harness leaves it: a run with its attempt."""
    run = QualityRun.objects.create(workspace_id=fire.workspace_id, fire=fire, state="done", final_attempt=1)
    QualityAttempt.objects.create(workspace_id=fire.workspace_id, run=run, number=1,
                                  contract={"passed": True, "issues": []}, verifier={"score": 0.9, "issues": []})
    return fire


@pytest.fixture
def operator(client, workspace):
    user = member(workspace)
    client.force_login(user)
    return client


def detected(workspace, session: str, times: int = 3) -> None:
    """A loop detection in the conversation `session`, recorded as the loop guard records it."""
    loop_events_record(workspace_id=workspace.pk, session=session, model="llama3.2",
                       events=[{"kind": "repeated_output", "level": 1, "detail": {"output": "again", "times": times}}])


def dashboard_urls(*, fire, proposal, conflict_row, task, directive, run) -> list[tuple[str, str]]:
    """Every dashboard URL that names a row, as (method, path)."""
    return [
        ("get", "/festinger/conversations/agent-zero-1"),
        ("get", f"/fires/{fire.pk}/card"), ("get", f"/fires/{fire.pk}/why"), ("get", f"/loop/{fire.pk}"),
        ("get", f"/proposals/{proposal.pk}"), ("post", f"/proposals/{proposal.pk}/approve"),
        ("post", f"/proposals/{proposal.pk}/deny"), ("post", f"/proposals/{proposal.pk}/edit"),
        ("post", f"/conflicts/{conflict_row.pk}/override"), ("post", f"/tasks/{task.pk}/cancel"),
        ("post", f"/fires/{fire.pk}/feedback"), ("post", f"/inbox/{directive.pk}/acknowledge"),
        ("post", f"/inbox/{directive.pk}/act"), ("post", f"/runs/{run.pk}/cancel"),
    ]


# --- login, workspaces ---------------------------------------------------------------------------------

def test_a_logged_out_user_is_sent_to_login_from_every_page(client, workspace):
    fire = fire_create(workspace=workspace, mode="reactive", question="q")
    for path in ["/", "/onboarding/", f"/loop/{fire.pk}", f"/fires/{fire.pk}/why", "/feed/stream",
                 "/festinger/conversations/agent-zero-1"]:
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), path
    assert client.post("/proposals/1/approve").status_code == 302


def test_an_operator_logs_in_with_the_csrf_token_and_lands_on_the_feed(workspace):
    member(workspace)
    browser = Client(enforce_csrf_checks=True)
    page = browser.get("/login/?next=/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    assert browser.post("/login/", {"username": "operator@example.com", "password": "wrong",
                                    "csrfmiddlewaretoken": token}).status_code == 200  # the form again
    response = browser.post("/login/", {"username": "operator@example.com", "password": PASSWORD,
                                        "csrfmiddlewaretoken": token, "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert f"Feed of {workspace.name}" in browser.get("/").content.decode()


def test_a_post_without_the_csrf_token_is_refused(workspace):
    proposal = provenance_proposal(workspace, level=3)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member(workspace))
    response = browser.post(f"/proposals/{proposal.pk}/approve")
    assert response.status_code == 403 and response["Content-Type"].startswith("text/html")  # a page, not JSON
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING and not Decision.objects.filter(proposal=proposal).exists()


def test_the_user_switches_between_the_workspaces_of_their_memberships(operator, workspace, other_workspace):
    Membership.objects.create(user=User.objects.get(username="operator@example.com"), workspace=other_workspace,
                              role="viewer")
    fire_create(workspace=other_workspace, mode="reactive", question="only over there")
    operator.post("/workspace/switch", {"workspace": workspace.slug})
    page = operator.get("/").content.decode()
    assert f'value="{other_workspace.slug}"' in page and "only over there" not in page

    response = operator.post("/workspace/switch", {"workspace": other_workspace.slug})
    assert response.status_code == 302
    page = operator.get("/").content.decode()
    assert "only over there" in page and f"Feed of {other_workspace.name}" in page
    assert 'action="/ask"' not in page  # a viewer there: no forms that act


def test_a_user_of_one_workspace_gets_404_on_every_url_of_another(operator, workspace, other_workspace,
                                                                  scripted_llm, festinger_knows):
    # given rows of another workspace, where this user has no membership
    fire = fire_create(workspace=other_workspace, mode="reactive", question="over there")
    detected(other_workspace, "agent-zero-1")  # a conversation, with the recollection its prompt received
    festinger_knows(other_workspace)
    scripted_llm.reply("It is a repo.")
    complete(workspace=other_workspace, role="proxy", messages=[Message.user("What is gnommoweb?")])
    recalled = TraceEvent.objects.get(workspace=other_workspace, kind=RECOLLECTION_EVENT).payload["session"]
    assert operator.get(f"/festinger/conversations/{recalled}").status_code == 404
    proposal = provenance_proposal(other_workspace, level=3)
    conflict_row = isa_isa_conflict(other_workspace)
    task = background_task(other_workspace, fire)
    directive = delta_create(workspace=other_workspace, content="look into the rover", tags=["kind:directive"])
    # then every URL naming them is the 404 page, and nothing was decided
    run = run_create(workspace=other_workspace, objective="map the rover's route")
    for method, path in dashboard_urls(fire=fire, proposal=proposal, conflict_row=conflict_row, task=task,
                                       directive=directive, run=run):
        response = getattr(operator, method)(path, {"reason": "no", "decision": "dismiss", "payload": "{}",
                                                    "rating": "down"})
        assert response.status_code == 404, (method, path)
    assert operator.post("/workspace/switch", {"workspace": other_workspace.slug}).status_code == 404
    proposal.refresh_from_db()
    conflict_row.refresh_from_db()
    task.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING and conflict_row.status == ConflictStatus.PENDING
    assert task.state != "canceled" and not InboxMark.objects.exists()
    run.refresh_from_db()
    assert run.status == "accepted"
    # and the feed shows none of them
    page = operator.get("/").content.decode()
    assert str(fire.pk) not in page and proposal.title not in page and "gnommoweb" not in page
    assert "look into the rover" not in page
    assert "agent-zero-1" not in page and "<recollection>" not in page and "Festinger loop detector" not in page


def test_a_user_without_a_workspace_goes_to_onboarding(client, db):
    client.force_login(User.objects.create_user(username="newcomer", password=PASSWORD))
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/onboarding/"


# --- the feed --------------------------------------------------------------------------------------------

def test_the_cards_counts_agree_with_the_fires_trace(operator, scripted_llm, workspace):
    # given a fire whose trace also holds the quality harness's calls (a classifier's and a verifier's)
    fire = fire_with_tools(scripted_llm, workspace)
    assert fire.trace_id
    for actor, tokens in (("classifier", (100, 5)), ("verifier", (300, 40))):
        for kind, (tokens_in, tokens_out) in (("llm.call.started", (0, 0)), ("llm.call.completed", tokens)):
            TraceEvent.objects.create(workspace=workspace, at=timezone.now(), kind=kind, name="llm.call",
                                      trace_id=fire.trace_id, span_id=actor[:16], actor_id=actor,
                                      input_tokens=tokens_in, output_tokens=tokens_out)
    # then the card counts what the trace shows, and says how many were the loop's own
    calls = TraceEvent.objects.filter(workspace=workspace, trace_id=fire.trace_id, kind="llm.call.started")
    completed = TraceEvent.objects.filter(workspace=workspace, trace_id=fire.trace_id, name="llm.call")
    total_in = sum(completed.values_list("input_tokens", flat=True))
    total_out = sum(completed.values_list("output_tokens", flat=True))
    page = operator.get("/").content.decode()
    summary = page[page.index("Thinking:"):page.index("</summary>", page.index("Thinking:"))]
    assert f"{calls.count()} model calls ({fire.model_calls} in the loop), {total_in}+{total_out} tokens" in summary, summary
    assert calls.count() == fire.model_calls + 2
    loop = operator.get(f"/loop/{fire.pk}").content.decode()
    assert f"{calls.count()} model calls ({fire.model_calls} in the loop)" in loop


def test_the_feed_shows_a_fires_bubbles_card_and_accordion_with_its_tool_calls(operator, scripted_llm, workspace):
    fire = fire_with_tools(scripted_llm, workspace, question="where did the rover go?")
    page = operator.get("/").content.decode()
    assert "where did the rover go?" in page  # the user's bubble
    assert "The rover went north." in page  # the card
    assert f'id="fire-{fire.pk}"' in page and 'class="thinking"' in page
    assert '<span class="tool">plan</span>' in page and '<span class="tool">state</span>' in page
    assert "find the notes" in page  # a tool call's arguments (and the plan board)
    assert "this fire has no session" in page  # a tool call's whole result
    assert "responded" in page  # the stop reason


def test_a_degraded_answers_card_says_it_is_unverified_and_why(operator, scripted_llm, workspace):
    # given a fire whose answer the quality harness kept degraded, and one that passed
    fire = fire_with_tools(scripted_llm, workspace, question="where did the rover go?")
    passed = fire_with_tools(scripted_llm, workspace, question="and the lander?")
    Fire.objects.filter(pk=fire.pk).update(verdict="degraded", verdict_reasons=[
        "Unfounded citation [deadbeefdeadbeef]: no delta of this workspace has that id"])
    Fire.objects.filter(pk=passed.pk).update(verdict="passed")
    # when the operator reads the feed
    page = operator.get("/").content.decode()
    # then the degraded card is marked, with its reasons, and only that one
    card = page[page.index(f'id="fire-{fire.pk}"'):]
    assert card.index("Unverified answer") < card.index("The rover went north.")
    assert "Unfounded citation [deadbeefdeadbeef]: no delta of this workspace has that id" in card
    assert page.count("Unverified answer") == 1


def test_the_feed_is_newest_first_and_paginated(operator, workspace):
    fires = [fire_create(workspace=workspace, mode="reactive", question=f"question {n}") for n in range(25)]
    page = feed_page(workspace=workspace)
    assert [e.fire.pk for e in page.entries] == [f.pk for f in reversed(fires)][:20]
    rest = feed_page(workspace=workspace, before=page.next_before)
    assert [e.fire.pk for e in rest.entries] == [f.pk for f in reversed(fires)][20:] and rest.next_before is None
    html = operator.get("/", {"before": page.next_before.isoformat()}).content.decode()
    assert "question 0" in html and "question 24" not in html and "<html" in html  # a page without JavaScript
    fragment = operator.get("/", {"before": page.next_before.isoformat()}, HTTP_HX_REQUEST="true").content.decode()
    assert "question 0" in fragment and "<html" not in fragment  # htmx's "Older entries" appends a fragment
    assert operator.get("/", {"before": "not a time"}).status_code == 404


def test_the_feed_page_costs_the_same_queries_for_two_entries_or_twenty(operator, scripted_llm, workspace,
                                                                       festinger_knows, django_assert_num_queries):
    festinger_knows(workspace)  # the fires' prompts receive recollections
    judged(fire_with_tools(scripted_llm, workspace, question="what about gnommoweb?"))
    detected(workspace, "agent-zero-1")
    provenance_proposal(workspace, level=3)
    operator.get("/")  # the first look makes the workspace's autonomy settings (their defaults)
    with CaptureQueriesContext(connection) as small:
        assert operator.get("/").status_code == 200
    for n in range(8):
        judged(fire_with_tools(scripted_llm, workspace, question=f"gnommoweb again {n}"))
        detected(workspace, f"agent-{n}")
        Feedback.objects.create(workspace=workspace, fire=Fire.objects.filter(workspace=workspace).first(), rating="up")
        provenance_proposal(workspace, level=1 + n % 3, title=f"era {n}")
    with django_assert_num_queries(len(small.captured_queries)):
        assert operator.get("/").status_code == 200
    assert len(small.captured_queries) == FEED_QUERIES, [q["sql"][:80] for q in small.captured_queries]
    page = operator.get("/").content.decode()
    assert page.count('class="recollections"') == 9 and page.count('class="loop-conversation"') == 9


def test_an_auto_approved_proposal_is_greyed_with_its_policy_tag(operator, workspace):
    provenance_proposal(workspace, level=1, title="A small episode")
    page = operator.get("/").content.decode()
    assert "proposal-entry status-approved auto" in page and "decided-by:auto-policy:level&lt;=2" in page
    assert page.count("auto-policy:level&lt;=2") == 1  # the tag says who decided: not a second time


# --- loop view, why ------------------------------------------------------------------------------------

def test_the_loop_view_and_why_this_surfaced_show_the_fire_close_up(operator, scripted_llm, workspace):
    cited = Delta.objects.create(workspace=workspace, content="the rover's log", tags=["kind:note"])
    fire = fire_with_tools(scripted_llm, workspace)
    fire.response = {**fire.response, "cited_ids": [cited.pk, "feedfacefeed"], "dropped_ids": ["0badc0de0bad"]}
    fire.save(update_fields=["response"])
    loop = operator.get(f"/loop/{fire.pk}").content.decode()
    assert "Loop view of fire" in loop and "find the notes" in loop and "Review pass" in loop
    assert '<details class="thinking" open>' in loop  # turn by turn, open
    assert 'class="thumb-down"' in loop  # and the card's other sections (here: quality's thumbs)
    why = operator.get(f"/fires/{fire.pk}/why").content.decode()
    assert "the rover&#x27;s log" in why and "state" in why
    # its tool calls' arguments as JSON, as the accordion shows them, not as Python reprs
    assert "&quot;action&quot;: &quot;pending_intents&quot;" in why and "&#x27;action&#x27;" not in why
    assert "[feedfacefeed]</code> cited, but no such delta" in why and "[0badc0de0bad]</code> dropped" in why
    assert operator.get("/loop/not-a-uuid").status_code == 404


# --- Festinger: the loop detector, recollections ---------------------------------------------------------

def test_the_loop_detector_panel_and_a_conversations_page_show_detections_mitigations_and_the_breaker(
        operator, proxy, fake_ollama, workspace, festinger_knows, celery_worker):
    festinger_knows(workspace)
    stuck_agent(proxy, fake_ollama, workspace, session="agent-zero-1")  # detected, mitigated, then stopped
    page = operator.get("/").content.decode()
    panel = page[page.index('id="panel-loops"'):]
    assert 'data-session="agent-zero-1"' in panel and "4 detections · 7 mitigations" in panel
    assert 'class="breaker breaker-open"' in panel and "level 4" in panel

    conversation = operator.get("/festinger/conversations/agent-zero-1").content.decode()
    assert "Conversation <code>agent-zero-1</code>" in conversation
    assert "breaker open: the model is spared for" in conversation
    assert conversation.count('class="loop-event detection"') == 4
    assert conversation.count('class="loop-event mitigation"') == 7
    assert "mitigation: circuit breaker opened" in conversation and "temperature 0.7 → 1.0" in conversation
    assert "“I will list the files in /tmp to find the report.” 3 times" in conversation
    # what its prompts received: a recollection before each model call (the breaker's answer had none)
    assert conversation.count('class="recollection-item"') == 6
    assert "gnommoweb: [type] repo" in conversation and "<code>gnommoweb</code>" in conversation
    assert operator.get("/festinger/conversations/agent-zero-2").status_code == 404  # no such conversation


def test_a_fires_card_shows_the_recollection_each_turn_received(operator, scripted_llm, workspace,
                                                               festinger_knows):
    festinger_knows(workspace)
    fire = fire_with_tools(scripted_llm, workspace, question="what about gnommoweb?")
    events = TraceEvent.objects.filter(workspace=workspace, kind=RECOLLECTION_EVENT, run_id=str(fire.pk))
    turns = sorted(fire.turns.filter(call_id__in=events.values("call_id")).values_list("number", flat=True))
    assert turns  # every turn named gnommoweb: each received the same block, shown once with their numbers

    page = operator.get("/").content.decode()
    start = page.index(f'id="fire-{fire.pk}"')
    card = page[start:page.index("</article>", start)]
    assert "Festinger's recollection: recalled gnommoweb (1 block)" in card
    assert f"Turn{'s' if len(turns) > 1 else ''} {', '.join(map(str, turns))} received" in card
    assert "&lt;recollection&gt;\ngnommoweb: [type] repo\n&lt;/recollection&gt;" in card
    # the latest recollections beside the feed, each with where it went
    panel = page[page.index('id="panel-recollections"'):]
    assert re.search(r"a fire's prompt( ×\d+)?: 1 recalled, 0 unknown", html.unescape(panel)) and f'href="/loop/{fire.pk}"' in panel
    assert "gnommoweb: [type] repo" in operator.get(f"/loop/{fire.pk}").content.decode()  # and its loop view


def test_the_recollections_panel_names_who_was_prompted_and_folds_repeats(operator, workspace):
    # given recollections given to a producer three times in a row, a conductor run, a Sit and a proxied call
    now = timezone.now()
    actors = ["festinger:proxy", "autonomy:7", "conductor:abc", *["producer:reflective:3"] * 3]
    for seconds, actor in enumerate(actors):
        TraceEvent.objects.create(workspace=workspace, at=now + timedelta(seconds=seconds), kind=RECOLLECTION_EVENT,
                                  name="llm.call", trace_id="t" * 32, span_id=f"{seconds:016d}", actor_id=actor,
                                  payload={"block": "<recollection>\nurchin: [type] animal\n</recollection>",
                                           "recalled": ["urchin"], "unknown": []})
    # when the operator opens the feed
    page = operator.get("/").content.decode()
    panel = page[page.index('id="panel-recollections"'):]
    panel = panel[:panel.index("</ul>")]
    # then each says who was prompted, newest first, the producer's three in a row shown once
    said = re.findall(r"· ([^:<]+): 1 recalled", html.unescape(panel))
    assert said == ["the reflective producer's prompt ×3", "a conductor run's prompt", "a Sit's prompt",
                    "a proxied prompt"]


def test_a_conversations_page_costs_the_same_queries_for_two_events_or_twenty(operator, workspace,
                                                                             django_assert_num_queries):
    detected(workspace, "agent-zero-1")
    detected(workspace, "agent-zero-1", times=4)
    with django_assert_num_queries(CONVERSATION_QUERIES):
        assert operator.get("/festinger/conversations/agent-zero-1").status_code == 200
    for times in range(5, 23):
        detected(workspace, "agent-zero-1", times=times)
    with django_assert_num_queries(CONVERSATION_QUERIES):
        page = operator.get("/festinger/conversations/agent-zero-1").content.decode()
    assert page.count('class="loop-event detection"') == 20 and "None of its prompts received" in page


# --- deciding ---------------------------------------------------------------------------------------------

def test_an_operator_approves_an_l3_proposal_inline_with_the_audit_of_admin_and_rest(operator, workspace):
    proposal = provenance_proposal(workspace, level=3)
    response = operator.post(f"/proposals/{proposal.pk}/approve", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "approved" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED and proposal.result_ref.startswith("delta:")
    decision = Decision.objects.get(proposal=proposal)
    assert (decision.action, decision.decided_by) == ("approve", "operator:user:operator@example.com")
    audit = operator.get(f"/proposals/{proposal.pk}").content.decode()
    assert "operator:user:operator@example.com" in audit


def test_an_operator_denies_with_a_reason_and_edits_before_approving(operator, workspace):
    denied = provenance_proposal(workspace, level=3, title="Denied era")
    assert operator.post(f"/proposals/{denied.pk}/deny", {"reason": ""}).status_code == 302  # refused: no reason
    denied.refresh_from_db()
    assert denied.status == ProposalStatus.PENDING
    operator.post(f"/proposals/{denied.pk}/deny", {"reason": "not an era"})
    denied.refresh_from_db()
    assert denied.status == ProposalStatus.DENIED
    assert Decision.objects.get(proposal=denied).reason == "not an era"

    edited = provenance_proposal(workspace, level=3, title="Edited era")
    assert f'id="payload-{edited.pk}"' in operator.get("/").content.decode()  # the inline edit form
    payload = {**edited.payload, "title": "A better title"}
    operator.post(f"/proposals/{edited.pk}/edit", {"payload": json.dumps(payload)})
    edited.refresh_from_db()
    assert edited.status == ProposalStatus.APPROVED
    assert Decision.objects.get(proposal=edited).action == "edit"


def test_a_viewer_cannot_decide(client, workspace):
    client.force_login(member(workspace, username="viewer@example.com", role="viewer"))
    proposal = provenance_proposal(workspace, level=3)
    conflict_row = isa_isa_conflict(workspace)
    assert client.post(f"/proposals/{proposal.pk}/approve").status_code == 403
    assert client.post(f"/conflicts/{conflict_row.pk}/override", {"decision": "dismiss"}).status_code == 403
    page = client.get("/").content.decode()
    assert 'class="approve"' not in page and "override-button" not in page
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING


def test_an_operator_overrides_a_conflict_through_festinger(operator, workspace):
    conflict_row = isa_isa_conflict(workspace)
    page = operator.get("/").content.decode()
    assert f'id="conflict-{conflict_row.pk}"' in page and "decompose" in page
    bad = operator.post(f"/conflicts/{conflict_row.pk}/override", {"decision": "decompose"})
    assert bad.status_code == 302
    conflict_row.refresh_from_db()
    assert conflict_row.status == ConflictStatus.PENDING  # decompose needs its two dimensions
    operator.post(f"/conflicts/{conflict_row.pk}/override", {"decision": "update", "reasoning": "containers now"})
    conflict_row.refresh_from_db()
    assert conflict_row.status == ConflictStatus.RESOLVED
    assert conflict_row.resolved_by == "operator:user:operator@example.com"
    assert Edge.objects.get(concept=conflict_row.concept, dimension=conflict_row.dimension).parent.token == "container"


# --- onboarding -------------------------------------------------------------------------------------------

def allowed_to_create_workspaces(user):
    user.user_permissions.add(Permission.objects.get(codename="add_workspace", content_type__app_label="fathom"))
    return user


def test_onboarding_creates_a_workspace_a_key_shown_once_a_model_a_delta_and_a_question(client, db):
    user = allowed_to_create_workspaces(User.objects.create_user(username="newcomer", password=PASSWORD))
    client.force_login(user)
    client.post("/onboarding/", {"step": "workspace", "slug": "first", "name": "First"})
    membership = Membership.objects.get(user=user)
    assert (membership.workspace.slug, membership.role) == ("first", "owner")

    page = client.post("/onboarding/", {"step": "apikey"}).content.decode()
    secret = re.search(r'<code class="secret">([^<]+)</code>', page).group(1)
    key = ApiKey.objects.get(workspace=membership.workspace)
    assert secret.startswith("fth_") and key.hashed_secret != secret
    assert secret not in client.get("/onboarding/").content.decode()  # shown once

    client.post("/onboarding/", {"step": "model", "provider": "openai", "model": "gpt-4o-mini",
                                 "api_key": "sk-dashboard-secret"})
    row = ModelAssignment.objects.get(workspace=membership.workspace, role="main").model
    assert row.get_api_key() == "sk-dashboard-secret"
    assert (row.workspace, row.name, row.uses_deployment_key) == (membership.workspace, "main-gpt-4o-mini", False)
    assert "sk-dashboard-secret" not in LLMModel.objects.get(pk=row.pk).api_key_encrypted

    client.post("/onboarding/", {"step": "delta", "content": "The rover left on Monday.", "tags": "kind:note"})
    assert Delta.objects.get(workspace=membership.workspace).tags == ["kind:note"]

    client.post("/onboarding/", {"step": "question", "question": "When did the rover leave?"})
    message = Trigger.objects.get(session__workspace=membership.workspace)
    assert (message.content, message.author) == ("When did the rover leave?", "newcomer")


def test_a_user_without_the_privilege_is_offered_no_workspace_and_cannot_create_one(client, db, workspace):
    stranger = User.objects.create_user(username="stranger", password=PASSWORD)
    viewer = User.objects.create_user(username="viewer-only", password=PASSWORD)
    Membership.objects.create(user=viewer, workspace=workspace, role="viewer")
    for user in (stranger, viewer):
        client.force_login(user)
        page = client.get("/onboarding/").content.decode()
        assert 'value="workspace"' not in page and "Creating a workspace is a privilege" in page

        response = client.post("/onboarding/", {"step": "workspace", "slug": f"mine-{user.pk}"}, follow=True)

        assert "a superuser grants" in response.content.decode()
        assert not Workspace.objects.filter(slug=f"mine-{user.pk}").exists()
        assert not Membership.objects.filter(user=user, role="owner").exists()


def test_a_tenants_model_at_a_foreign_base_url_is_refused_on_onboarding(client, db, settings):
    settings.OPENAI_API_KEY = "sk-deployment-env"
    user = allowed_to_create_workspaces(User.objects.create_user(username="tenant", password=PASSWORD))
    client.force_login(user)
    client.post("/onboarding/", {"step": "workspace", "slug": "tenant-ws"})

    response = client.post("/onboarding/", {"step": "model", "provider": "openai", "model": "gpt-4o-mini",
                                            "base_url": "http://collector.example.net/v1"}, follow=True)

    assert "FATHOM_MODEL_BASE_URLS" in response.content.decode()
    assert not LLMModel.objects.filter(workspace__slug="tenant-ws").exists()


def test_sit_rounds_show_as_pairs_with_the_self_stripe(operator, workspace):
    for n in (1, 2):
        fire_create(workspace=workspace, mode="self_directing", messages=[
            {"id": None, "content": f"reflect, round {n}", "author": "self", "source": "sit",
             "sit": {"round": n, "cap": 3}}])
    page = operator.get("/").content.decode()
    assert page.count("fire-entry sit") == 2 and "Sit round 2/3 · pass-intent" in page
    assert page.index("reflect, round 2") < page.index("reflect, round 1")  # newest first


def test_a_fires_background_tasks_show_on_its_card_and_an_operator_cancels_one(operator, workspace):
    fire = fire_create(workspace=workspace, mode="reactive", question="list my notes")
    task = background_task(workspace, fire)
    page = operator.get("/").content.decode()
    assert "fs_list(fs://notes)" in page and f'id="task-{task.pk}"' in page  # on the card, and in the panel
    response = operator.post(f"/tasks/{task.pk}/cancel")
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.state == "canceled" and task.cancel_requested_by == "operator:user:operator@example.com"


def test_a_running_cards_contract_is_pending_until_it_is_evaluated(operator, workspace):
    fire = fire_create(workspace=workspace, mode="reactive", question="still thinking")
    run = QualityRun.objects.create(workspace=workspace, fire=fire, state="running")
    attempt = QualityAttempt.objects.create(workspace=workspace, run=run, number=1)
    page = operator.get("/").content.decode()
    card = page.split(f'id="fire-{fire.pk}"', 1)[1]  # the feed's filter offers "failed": the card alone
    assert 'contract <span class="contract-pending">pending</span>' in card and "failed" not in card
    attempt.contract = {"passed": False, "issues": ["no answer"]}
    attempt.save()
    assert 'contract <span class="fail">failed</span>' in operator.get("/").content.decode()


def test_a_cards_quality_shows_and_thumbs_post_the_feedback_the_verifier_calibrates_on(operator, scripted_llm,
                                                                                        workspace):
    fire = fire_with_tools(scripted_llm, workspace)
    run = QualityRun.objects.create(workspace=workspace, fire=fire, state="done", final_attempt=2, verifier_score=0.82,
                                    scores={"harness_rqs": {"score": 0.81, "grade": "B", "label": "good"}},
                                    degraded={"attempts_made": 2})
    QualityAttempt.objects.create(workspace=workspace, run=run, number=1, contract={"passed": False, "issues": []},
                                  verifier={"passed": False, "score": 0.4, "issues": ["too thin"]})
    QualityAttempt.objects.create(workspace=workspace, run=run, number=2,
                                  contract={"passed": True, "issues": []},
                                  verifier={"passed": True, "score": 0.82, "issues": ["one uncited claim"]})
    page = operator.get("/").content.decode()
    assert "harness_rqs B (0.81)" in page and "contract <span class=\"pass\">passed" in page
    assert "verifier 0.82" in page and "one uncited claim" in page and "too thin" not in page  # the final attempt
    assert "1 retry" in page and "degraded" in page

    response = operator.post(f"/fires/{fire.pk}/feedback", {"rating": "down"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "👎 1" in response.content.decode()
    feedback = Feedback.objects.get(fire=fire)
    assert (feedback.rating, feedback.verifier_score, feedback.author) == (
        "down", 0.82, "operator:user:operator@example.com")

    waiting = fire_create(workspace=workspace, mode="reactive", question="not answered yet")
    assert f"/fires/{waiting.pk}/feedback" not in operator.get("/").content.decode()
    operator.post(f"/fires/{waiting.pk}/feedback", {"rating": "up"})
    assert not Feedback.objects.filter(fire=waiting).exists()



# --- autonomy ----------------------------------------------------------------------------------------------

def test_the_pressure_panel_shows_the_gauge_its_breakdown_and_the_series_plot(operator, workspace):
    for value in (0.1, 0.3, 0.5):
        PressureSample.objects.create(workspace=workspace, value=value, breakdown={})
    page = operator.get("/").content.decode()
    assert 'id="pressure-meter"' in page and "of threshold 0.35" in page
    # the breakdown by signal, in human labels; a workspace that never sat says so
    assert "Un-provenanced material" in page and "Pending conflicts" in page and "never sat" in page
    assert "<polyline points=" in page and "3 samples from 0.10 to 0.50" in page
    assert 'value="observe" checked' in page  # the default mode


def test_beside_the_gauge_autonomy_says_why_in_words(operator, workspace):
    autonomy_settings_update(workspace=workspace, mode="on", threshold=0.0)
    message_send(session=session_create(workspace=workspace, title="asking"), content="rover dune")
    autonomy_sweep()
    page = operator.get("/").content.decode()
    assert '<p class="why-now" data-reason="not_idle">' in page
    assert "idle gate: last question under a minute ago; it opens in 14 min (15 min after a question)" in page
    assert '<li class="decision decision-skip" data-reason="not_idle">' in page


def test_the_pressure_plot_spans_the_samples_it_has(operator, workspace):
    # a fresh install: a few minutes of samples fill the plot's width, not its last pixels
    for minutes_ago, value in ((4, 0.1), (2, 0.3), (0, 0.5)):
        sample = PressureSample.objects.create(workspace=workspace, value=value, breakdown={})
        PressureSample.objects.filter(pk=sample.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    page = operator.get("/").content.decode()
    xs = [float(point.split(",")[0]) for point in re.search(r'<polyline points="([^"]+)"', page).group(1).split()]
    assert xs[-1] - xs[0] > 100 and "The last 10 min:" in page  # 280 px wide; at least ten minutes shown

    PressureSample.objects.filter(workspace=workspace).exclude(value=0.5).delete()
    page = operator.get("/").content.decode()
    assert '<circle class="plot-point"' in page and "1 sample from 0.50" in page  # one sample: a point


def test_an_operator_flips_the_autonomy_switch(operator, client, workspace):
    operator.post("/autonomy/mode", {"mode": "on"})
    assert AutonomySettings.objects.get(workspace=workspace).mode == "on"
    operator.post("/autonomy/mode", {"mode": "sometimes"})  # refused by the service
    assert AutonomySettings.objects.get(workspace=workspace).mode == "on"
    operator.post("/autonomy/mode", {"mode": "off"})
    page = operator.get("/").content.decode()
    assert "Autonomy is off: nothing is sampled." in page and 'id="pressure-meter"' not in page

    client.force_login(member(workspace, username="viewer@example.com", role="viewer"))
    assert client.post("/autonomy/mode", {"mode": "on"}).status_code == 403


def test_the_inbox_and_the_crystal_of_directives(operator, workspace):
    directive = delta_create(workspace=workspace, content="Look into the rover's logs", tags=["kind:directive"])
    page = operator.get("/").content.decode()
    assert f'id="inbox-{directive.pk}"' in page and page.count("Look into the rover&#x27;s logs") == 2
    operator.post(f"/inbox/{directive.pk}/acknowledge")
    assert InboxMark.objects.get(delta_id=directive.pk).state == "acknowledged"
    assert f'id="inbox-{directive.pk}"' not in operator.get("/").content.decode()  # no longer new
    operator.post(f"/inbox/{directive.pk}/act")
    mark = InboxMark.objects.get(delta_id=directive.pk)
    assert mark.state == "acted" and mark.actor == "operator:user:operator@example.com"
    assert "Look into the rover's logs" in mark.trigger.content
    assert operator.post(f"/inbox/{directive.pk}/shred").status_code == 404


def test_an_autonomous_sit_is_marked(operator, workspace):
    fire_create(workspace=workspace, mode="self_directing", messages=[
        {"id": None, "content": "what presses most", "author": "self", "source": "sit",
         "sit": {"round": 1, "cap": 3, "autonomous": "7"}}])
    page = operator.get("/").content.decode()
    assert 'Sit round 1/3 · <span class="autonomous">autonomous</span>' in page



def test_conductor_runs_show_beside_the_feed_and_an_operator_cancels_one(operator, workspace):
    run = run_create(workspace=workspace, objective="Map the rover's route across the dunes")
    page = operator.get("/").content.decode()
    assert f'id="run-{run.pk}"' in page and "Map the rover&#x27;s route" in page and "0/0 done" in page
    operator.post(f"/runs/{run.pk}/cancel")
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert f'action="/runs/{run.pk}/cancel"' not in operator.get("/").content.decode()


def test_the_plan_board_shows_its_revisions_and_drift(operator, scripted_llm, workspace):
    fire, _ = run_tools(scripted_llm, workspace, [
        ("p1", "plan", {"question": "rover", "steps": ["first idea"]}),
        ("p2", "plan", {"question": "rover", "steps": ["find the notes", "summarise"]}),
        ("s1", "state", {"action": "pending_intents"}),
    ], respond={"body": "done"}, mode="reactive")
    page = operator.get("/").content.decode()
    assert "Revised 1 time" in page and "Turn 1: first idea" in page
    assert "Drift: 1 call off the plan (state)" in page


def test_the_live_feed_knows_what_the_page_holds():
    rendered = timezone.now()
    states = {"shown": (rendered - timedelta(minutes=5), "finished.done.3.3"),
              "older": (rendered - timedelta(hours=1), "finished.done.1.1"),  # below the page's window
              "started-since": (rendered + timedelta(seconds=1), "accepted.main.0.0")}
    known = stream.known_fires(states, shown={"shown": "running.main.1.1"}, until=rendered, cursor=None)
    # the shown fire moved on (its card is sent again), the older one is not new, the one since is new
    assert known == {"shown": "running.main.1.1", "older": "finished.done.1.1"}
    # a reconnect holds every fire up to its cursor, and is sent their cards again
    cursor = stream.Cursor.parse(str(stream.Cursor(fires_until=rendered, proposal_id=4)))
    assert cursor.proposal_id == 4
    assert stream.known_fires(states, shown={}, until=None, cursor=cursor) == {"shown": None, "older": None}
    assert stream.Cursor.parse("not ours") is None


def test_an_invalid_edit_on_the_proposal_page_keeps_the_text_and_decides_nothing(operator, workspace):
    proposal = provenance_proposal(workspace, level=3)
    response = operator.post(f"/proposals/{proposal.pk}/edit", {"payload": "{broken", "next": f"/proposals/{proposal.pk}"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Not approved: the payload is not valid JSON" in page and ">{broken</textarea>" in page
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING and not proposal.decisions.exists()


def test_an_inline_decision_tells_waiting_for_you_to_reload_and_the_panel_renders_alone(operator, workspace):
    proposal = provenance_proposal(workspace, level=3, title="The long drive")
    panel = operator.get("/panels/proposals").content.decode()
    assert 'id="side-proposals"' in panel and "The long drive" in panel
    response = operator.post(f"/proposals/{proposal.pk}/approve", HTTP_HX_REQUEST="true")
    assert response["HX-Trigger"] == "panel-proposals-changed"
    panel = operator.get("/panels/proposals").content.decode()
    assert 'id="side-proposals"' in panel and " hidden" in panel and "The long drive" not in panel
    assert operator.get("/panels/no-such-panel").status_code == 404


# --- the lake ------------------------------------------------------------------------------------------------

def test_the_lake_page_searches_and_each_hit_links_to_its_delta(operator, workspace):
    delta = delta_create(workspace=workspace, content="The rover crossed the dune at dawn")
    page = operator.get("/lake/?q=rover+dune&mode=text").content.decode()
    assert f'href="/lake/{delta.pk}"' in page and "The rover crossed the dune at dawn" in page
    bad = operator.get("/lake/?q=rover&mode=sideways")
    assert bad.status_code == 400 and "mode must be one of" in bad.content.decode()


def test_a_deltas_page_shows_its_provenance_up_and_down_as_links(operator, workspace, other_workspace):
    episode = provenance_proposal(workspace, level=1, title="The rover era")
    provenance = Delta.objects.get(workspace=workspace, pk=episode.result_ref.removeprefix("delta:"))
    moment = provenance.from_ids[0]
    down = operator.get(f"/lake/{provenance.pk}").content.decode()
    assert all(f'href="/lake/{child}"' in down for child in provenance.from_ids)
    up = operator.get(f"/lake/{moment}").content.decode()
    assert f'href="/lake/{provenance.pk}"' in up and "Provenance up" in up
    theirs = delta_create(workspace=other_workspace, content="not yours")
    assert operator.get(f"/lake/{theirs.pk}").status_code == 404


@pytest.mark.parametrize("delta_id", ["zzzz", "abc", "d0511d7", "d0511d7f"])  # not hex, short, 7 hex, unknown
def test_a_delta_id_that_cannot_exist_is_the_404_page_of_an_unknown_one(operator, workspace, delta_id):
    for response in (operator.get(f"/lake/{delta_id}"), operator.post(f"/inbox/{delta_id}/acknowledge")):
        assert response.status_code == 404 and response["Content-Type"].startswith("text/html"), delta_id
        assert f"no delta &#x27;{delta_id}&#x27; in this workspace" in response.content.decode()


def test_an_id_prefix_two_deltas_share_is_a_400_page_naming_it(operator, workspace):
    for suffix in ("00000000", "11111111"):
        Delta.objects.create(workspace=workspace, id=f"abcdef12{suffix}", content="twin")

    response = operator.get("/lake/abcdef12")

    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")
    assert "abcdef12" in response.content.decode()


def test_cited_ids_in_an_answer_are_links_to_the_lake(operator, scripted_llm, workspace):
    delta = delta_create(workspace=workspace, content="The rover went north")
    run_tools(scripted_llm, workspace, [], respond={"body": f"It went north [{delta.pk}]. <b>bold</b>"},
              question="where?", mode="reactive")
    page = operator.get("/").content.decode()
    assert f'<a class="cited" href="/lake/{delta.pk}">[{delta.pk}]</a>' in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page  # the rest of the answer stays escaped


def test_the_autonomy_page_shows_the_switch_why_and_the_decisions_in_words(operator, workspace):
    autonomy_settings_update(workspace=workspace, mode="on", threshold=1.0)
    autonomy_sweep()
    directive = delta_create(workspace=workspace, content="Look into the rover's logs", tags=["kind:directive"])
    page = operator.get("/autonomy/").content.decode()
    assert 'id="pressure-meter"' in page and '<p class="why-now" data-reason="below_threshold">' in page
    assert '<tr class="decision decision-skip" data-reason="below_threshold">' in page
    assert "below the threshold: pressure" in page and f'id="inbox-{directive.pk}"' in page
