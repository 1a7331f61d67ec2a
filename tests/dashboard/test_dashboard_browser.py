"""The operator dashboard in headless Chromium against uvicorn (as `fathom up` serves it): log in,
switch workspace, open a fire's accordion, watch a new fire arrive live, approve and deny proposals
inline, override a conflict, follow a loop the proxy's detector caught and read the recollections
prompts received. Each flow saves a screenshot (see conftest.py)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as seen
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from fathom.models import Membership
from festinger.models import ConflictStatus
from harness.autonomy.models import AutonomySettings, PressureSample
from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from harness.fires.services import fire_create
from harness.quality.models import Feedback
from harness.runtime.models import Trigger
from harness.runtime.services import message_send, session_create
from proposals.models import Decision, ProposalStatus
from tests.dashboard.support import (
    PASSWORD,
    fire_with_tools,
    member,
    provenance_proposal,
    stuck_agent,
)
from tests.festinger.conftest import isa_isa_conflict
from tests.harness.support import wait_for_background_work

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
OPERATOR = "operator@example.com"


def log_in(browser, url: str, username: str = OPERATOR) -> WebDriverWait:
    browser.get(f"{url}/")  # logged out: sent to login
    # a live update may swap the node a condition is reading: Chrome's "does not belong to the document"
    wait = WebDriverWait(browser, 30, ignored_exceptions=(WebDriverException,))
    wait.until(seen.visibility_of_element_located((By.ID, "id_username"))).send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait.until(seen.visibility_of_element_located((By.ID, "feed-heading")))
    return wait


def test_an_operator_logs_in_and_switches_workspace(live_server_url, browser, screenshot, workspace,
                                                    other_workspace):
    user = member(workspace)
    member(other_workspace, role="viewer")
    fire_create(workspace=other_workspace, mode="reactive", question="a question over there")
    wait = log_in(browser, live_server_url)
    assert browser.current_url.rstrip("/") == live_server_url
    screenshot("login-feed")

    Select(browser.find_element(By.ID, "workspace-select")).select_by_value(workspace.slug)
    browser.find_element(By.CSS_SELECTOR, ".switcher button").click()
    wait.until(seen.text_to_be_present_in_element((By.ID, "feed-heading"), workspace.name))
    Select(browser.find_element(By.ID, "workspace-select")).select_by_value(other_workspace.slug)
    browser.find_element(By.CSS_SELECTOR, ".switcher button").click()
    wait.until(seen.text_to_be_present_in_element((By.ID, "feed-heading"), other_workspace.name))
    assert "a question over there" in browser.page_source
    screenshot("switched-workspace")
    assert user.memberships.count() == 2


def test_a_fires_accordion_expands_and_a_new_fire_arrives_live(live_server_url, browser, screenshot, scripted_llm,
                                                               workspace):
    member(workspace)
    fire = fire_with_tools(scripted_llm, workspace)
    wait = log_in(browser, live_server_url)
    card = browser.find_element(By.ID, f"fire-{fire.pk}")
    card.find_element(By.CSS_SELECTOR, "details.thinking > summary").click()
    call = wait.until(lambda _: card.find_element(By.CSS_SELECTOR, "details.call summary"))
    assert call.text.startswith("plan")
    call.click()
    arguments = card.find_element(By.CSS_SELECTOR, "details.call pre")
    wait.until(lambda _: arguments.is_displayed())
    assert "find the notes" in arguments.text
    assert [e.text for e in card.find_elements(By.CSS_SELECTOR, "details.call .tool")] == ["plan", "state", "respond", "skip"]
    screenshot("accordion")

    # a thumbs-down on the answer is the feedback the verifier calibrates on
    card.find_element(By.CSS_SELECTOR, "button.thumb-down").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, f"#fire-{fire.pk} button.thumb-down"), "1"))
    assert Feedback.objects.get(fire=fire).rating == "down"
    screenshot("thumbs-down")

    # a fire started elsewhere appears on the open page, without a reload
    wait.until(lambda driver: driver.execute_script("return !!(window.htmx && document.querySelector('[sse-connect]'))"))
    live = fire_create(workspace=workspace, mode="reactive", question="is anyone watching live?")
    WebDriverWait(browser, 30).until(seen.presence_of_element_located((By.ID, f"fire-{live.pk}")))
    assert "is anyone watching live?" in browser.find_element(By.ID, f"fire-{live.pk}").text
    first = browser.find_element(By.CSS_SELECTOR, "#feed > li")
    assert first.get_attribute("id") == f"fire-{live.pk}"  # newest first
    screenshot("live-fire")


def test_an_operator_approves_an_l3_proposal_inline_and_denies_another(live_server_url, browser, screenshot,
                                                                       workspace):
    member(workspace)
    approved = provenance_proposal(workspace, level=3, title="The rover era")
    denied = provenance_proposal(workspace, level=3, title="The wrong era")
    auto = provenance_proposal(workspace, level=1, title="A small episode")
    wait = log_in(browser, live_server_url)
    assert "auto" in browser.find_element(By.ID, f"proposal-{auto.pk}").get_attribute("class")  # greyed
    screenshot("proposals")

    browser.find_element(By.CSS_SELECTOR, f"button.approve[data-proposal='{approved.pk}']").click()
    wait.until(seen.text_to_be_present_in_element((By.ID, f"proposal-{approved.pk}"), f"by {'operator:user:' + OPERATOR}"))
    assert Decision.objects.get(proposal=approved).decided_by == f"operator:user:{OPERATOR}"

    row = browser.find_element(By.ID, f"proposal-{denied.pk}")
    row.find_element(By.NAME, "reason").send_keys("not an era")
    row.find_element(By.CSS_SELECTOR, "button.deny").click()
    wait.until(seen.text_to_be_present_in_element((By.ID, f"proposal-{denied.pk}"), "Denied"))
    denied.refresh_from_db()
    assert denied.status == ProposalStatus.DENIED
    screenshot("proposals-decided")

    # the audit row, on the proposal's page
    browser.get(f"{live_server_url}/proposals/{approved.pk}")
    audit = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.audit tr.decision")))
    assert f"operator:user:{OPERATOR}" in audit.text and "Approve" in audit.text
    screenshot("proposal-audit")


def test_an_operator_overrides_a_conflict(live_server_url, browser, screenshot, workspace):
    member(workspace)
    pending = isa_isa_conflict(workspace)
    wait = log_in(browser, live_server_url)
    item = browser.find_element(By.ID, f"conflict-{pending.pk}")
    Select(item.find_element(By.NAME, "decision")).select_by_value("update")
    item.find_element(By.NAME, "reasoning").send_keys("containers now")
    screenshot("conflict")
    item.find_element(By.CSS_SELECTOR, "button.override-button").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "update applied"))
    pending.refresh_from_db()
    assert pending.status == ConflictStatus.RESOLVED and pending.resolved_by == f"operator:user:{OPERATOR}"
    screenshot("conflict-overridden")


def test_a_question_asked_waits_as_a_bubble_until_its_fire_arrives_live(live_server_url, browser, screenshot,
                                                                        workspace):
    member(workspace)
    wait = log_in(browser, live_server_url)
    assert browser.find_element(By.ID, "feed-empty").is_displayed()  # nothing yet
    browser.find_element(By.ID, "id_question").send_keys("Where is the rover now?")
    browser.find_element(By.CSS_SELECTOR, "form.ask button").click()
    waiting = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "#feed li.waiting")))
    assert "Where is the rover now?" in waiting.text and "waiting for a turn" in waiting.text
    screenshot("question-waiting")

    # a worker takes the message up (here: the test, as a session turn would): its fire replaces the bubble
    wait.until(lambda driver: driver.execute_script("return !!(window.htmx && document.querySelector('[sse-connect]'))"))
    message = Trigger.objects.get(workspace=workspace, content="Where is the rover now?")
    Trigger.objects.filter(pk=message.pk).update(state=Trigger.State.SNAPSHOTTED)
    fire = fire_create(workspace=workspace, mode="reactive", session=message.session, messages=[
        {"id": str(message.pk), "content": message.content, "author": message.author, "source": message.source}])
    wait.until(seen.presence_of_element_located((By.ID, f"fire-{fire.pk}")))
    wait.until(seen.invisibility_of_element_located((By.ID, f"waiting-{message.pk}")))
    assert not browser.find_elements(By.ID, "feed-empty")
    assert "Where is the rover now?" in browser.find_element(By.ID, f"fire-{fire.pk}").text
    screenshot("question-fire")


def test_a_newcomer_goes_through_the_first_run(live_server_url, browser, screenshot, db):
    newcomer = User.objects.create_user(username="newcomer", password=PASSWORD)
    newcomer.user_permissions.add(Permission.objects.get(codename="add_workspace", content_type__app_label="fathom"))
    browser.get(f"{live_server_url}/")
    wait = WebDriverWait(browser, 30)
    wait.until(seen.visibility_of_element_located((By.ID, "id_username"))).send_keys("newcomer")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait.until(seen.visibility_of_element_located((By.ID, "id_slug"))).send_keys("first")  # no workspace yet
    browser.find_element(By.ID, "id_name").send_keys("First light")
    browser.find_element(By.XPATH, "//button[text()='Create workspace']").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "Workspace first created"))
    browser.find_element(By.XPATH, "//button[text()='Create an operator key']").click()
    secret = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "code.secret"))).text
    assert secret.startswith("fth_")
    browser.find_element(By.ID, "id_content").send_keys("The rover left on Monday.")
    browser.find_element(By.XPATH, "//button[text()='Write delta']").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "written to the lake"))
    screenshot("onboarding")
    assert Membership.objects.get(user__username="newcomer").workspace.slug == "first"


@pytest.mark.worker
def test_a_question_asked_on_the_dashboard_is_answered_by_a_worker_live(celery_worker, live_server_url, browser,
                                                                        screenshot, workspace):
    member(workspace)
    wait = log_in(browser, live_server_url)
    wait.until(lambda driver: driver.execute_script("return !!(window.htmx && document.querySelector('[sse-connect]'))"))
    browser.find_element(By.ID, "id_question").send_keys("What do you know about the rover?")
    browser.find_element(By.CSS_SELECTOR, "form.ask button").click()
    # the worker's fire arrives and finishes on the open page (no model configured: the offline model answers)
    finished = WebDriverWait(browser, 60).until(
        lambda driver: driver.find_elements(By.CSS_SELECTOR, "#feed li.fire-entry[data-status=finished]"))
    card = finished[0]
    assert "What do you know about the rover?" in card.text and "[offline]" in card.text
    summary = card.find_element(By.CSS_SELECTOR, "details.thinking > summary").text
    assert "model call" in summary and "stopped: responded" in summary
    screenshot("answered-live")
    # its loop view has the trace the worker wrote: the prompt, the model calls, the tool calls
    card.find_element(By.LINK_TEXT, "Loop view").click()
    trace = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.trace")))
    assert "llm.call.completed" in trace.text and "worker.tool.call" in trace.text
    screenshot("loop-view")
    wait_for_background_work(Trigger.objects.get(workspace=workspace).session)


def test_an_operator_flips_the_autonomy_switch_beside_the_pressure_gauge(live_server_url, browser, screenshot,
                                                                        workspace):
    member(workspace)
    for hours_ago, value in ((20, 0.1), (15, 0.25), (10, 0.45), (6, 0.2), (2, 0.3), (0, 0.15)):
        sample = PressureSample.objects.create(workspace=workspace, value=value, breakdown={})
        PressureSample.objects.filter(pk=sample.pk).update(created_at=timezone.now() - timedelta(hours=hours_ago))
    autonomy_settings_update(workspace=workspace, threshold=0.0)
    message_send(session=session_create(workspace=workspace, title="asking"), content="rover dune")
    autonomy_sweep()
    wait = log_in(browser, live_server_url)
    assert browser.find_element(By.ID, "pressure-meter").is_displayed()
    # beside the gauge, why: in words, what the sweep would do now and what it decided
    why = browser.find_element(By.CSS_SELECTOR, ".autonomy-why")
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "pressure-meter"))
    assert why.is_displayed() and "idle gate: last question" in why.find_element(By.CSS_SELECTOR, ".why-now").text
    assert "it opens in 14 min" in why.find_element(By.CSS_SELECTOR, "li.decision").text
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-signal=since_sit] td").text == "never sat"
    screenshot("pressure")
    browser.find_element(By.CSS_SELECTOR, ".switch input[value=on]").click()
    browser.find_element(By.CSS_SELECTOR, ".switch-button").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "Autonomy is on."))
    assert AutonomySettings.objects.get(workspace=workspace).mode == "on"
    assert browser.find_element(By.CSS_SELECTOR, ".switch input[value=on]").is_selected()


def test_an_operator_follows_a_loop_the_proxy_caught_and_reads_the_recollections(
        live_server_url, browser, screenshot, proxy, fake_ollama, scripted_llm, workspace, festinger_knows,
        celery_worker):
    member(workspace)
    festinger_knows(workspace)
    fire = fire_with_tools(scripted_llm, workspace, question="What changed in gnommoweb this week?")
    stuck_agent(proxy, fake_ollama, workspace, session="agent-zero-1")  # detected, mitigated, then stopped
    wait = log_in(browser, live_server_url)

    # beside the feed: the conversation the detector caught, its breaker open; the latest recollections
    panel = browser.find_element(By.ID, "panel-loops").find_element(By.XPATH, "..")
    conversation = panel.find_element(By.CSS_SELECTOR, "li.loop-conversation[data-session='agent-zero-1']")
    assert "4 detections · 7 mitigations" in conversation.text and "breaker open" in conversation.text
    latest = browser.find_element(By.ID, "panel-recollections").find_element(By.XPATH, "..")
    latest.find_element(By.CSS_SELECTOR, "li.recollection-item summary").click()
    block = wait.until(lambda _: latest.find_element(By.CSS_SELECTOR, "pre.recollection-block"))
    wait.until(lambda _: block.is_displayed())
    assert "gnommoweb: [type] repo" in block.text
    browser.execute_script("arguments[0].scrollIntoView()", panel)
    screenshot("festinger-panels")

    # on the fire's card: what each of its turns was given
    card = browser.find_element(By.ID, f"fire-{fire.pk}")
    card.find_element(By.CSS_SELECTOR, "details.recollections > summary").click()
    given = card.find_element(By.CSS_SELECTOR, "details.recollections pre.recollection-block")
    wait.until(lambda _: given.is_displayed())
    assert given.text == "<recollection>\ngnommoweb: [type] repo\n</recollection>"
    browser.execute_script("arguments[0].scrollIntoView()", card)
    screenshot("recollection")

    # the conversation close up: every detection and mitigation, and what its prompts received
    conversation.find_element(By.TAG_NAME, "a").click()
    table = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.loop-events")))
    assert "detected: the same output repeated" in table.text and "mitigation: circuit breaker opened" in table.text
    assert "breaker open" in browser.find_element(By.CSS_SELECTOR, ".conversation .breaker").text
    assert "gnommoweb: [type] repo" in browser.find_element(By.CSS_SELECTOR, "ol.recollections").text
    screenshot("loop-conversation")
