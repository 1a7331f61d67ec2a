"""The dashboard's filters and list pages in headless Chromium: the feed filtered (kept in the URL, the
back button, a live entry that does not match never shown, the no-match state), the Proposals page
(pending first, decided inline, its tabs counted anew), the Festinger page (the world model searched, a
conflict overridden, a conversation opened), and the feed, lake and autonomy pages at 1024 and 1440 px,
nothing sideways and no console error while a live update arrives (on the autonomy page, in its table and
its Why panel). Screenshots: docs/screenshots (see conftest.py)."""

from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as seen
from selenium.webdriver.support.select import Select

from dashboard.sections import DECISION_ROWS
from festinger.services import insert_fact
from harness.autonomy.models import AutonomyDecision
from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from harness.fires.models import Fire
from harness.fires.services import fire_create
from lake.services import delta_create
from proposals.models import ProposalStatus
from tests.dashboard.support import member, provenance_proposal
from tests.dashboard.test_dashboard import detected
from tests.dashboard.test_dashboard_browser import log_in
from tests.dashboard.test_operator_browser import CONSOLE_ERRORS, live, scrolls_sideways
from tests.festinger.conftest import isa_isa_conflict

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
WIDTHS = (1024, 1440)


def watching(wait, browser):
    """Once htmx runs on the page, console errors and htmx's error events are recorded."""
    wait.until(lambda driver: driver.execute_script("return !!window.htmx"))
    browser.execute_script(CONSOLE_ERRORS)


def test_the_feed_is_filtered_in_its_url_and_a_live_entry_that_does_not_match_never_appears(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    answered = fire_create(workspace=workspace, mode="reactive", question="where did the rover go?")
    Fire.objects.filter(pk=answered.pk).update(status="finished", response={"body": "North, past the crater."})
    proposal = provenance_proposal(workspace, level=3, title="The rover era")
    wait = log_in(browser, live_server_url)
    assert browser.find_elements(By.ID, f"proposal-{proposal.pk}")

    # when the operator shows only answers about the rover
    Select(browser.find_element(By.ID, "id_kind")).select_by_value("answers")
    browser.find_element(By.ID, "id_q").send_keys("rover")
    browser.find_element(By.CSS_SELECTOR, "form.feed-filters button").click()
    wait.until(seen.url_contains("kind=answers"))
    assert parse_qs(urlsplit(browser.current_url).query) == {"kind": ["answers"], "q": ["rover"]}
    assert browser.find_elements(By.ID, f"fire-{answered.pk}") and not browser.find_elements(
        By.ID, f"proposal-{proposal.pk}")

    # then a live entry that matches appears, one that does not never does, and nothing errs
    live(wait, browser)
    sit = fire_create(workspace=workspace, mode="self_directing", question="the rover on my mind")
    other = fire_create(workspace=workspace, mode="reactive", question="what is the weather?")
    matching = fire_create(workspace=workspace, mode="reactive", question="is the rover back?")
    wait.until(seen.presence_of_element_located((By.ID, f"fire-{matching.pk}")))
    late = provenance_proposal(workspace, level=3, title="A later rover era")
    newest = fire_create(workspace=workspace, mode="reactive", question="and the rover now?")
    wait.until(seen.presence_of_element_located((By.ID, f"fire-{newest.pk}")))
    for absent in (f"fire-{sit.pk}", f"fire-{other.pk}", f"proposal-{late.pk}"):
        assert not browser.find_elements(By.ID, absent), absent
    assert browser.execute_script("return window.consoleErrors") == []
    screenshot("feed-filtered")

    # the back button returns to the unfiltered feed
    browser.back()
    wait.until(lambda driver: "kind=" not in driver.current_url)
    wait.until(seen.presence_of_element_located((By.ID, f"proposal-{proposal.pk}")))

    # a filter that matches nothing says so, and its clear link shows everything again
    browser.get(f"{live_server_url}/?kind=sits&status=pending")
    empty = wait.until(seen.visibility_of_element_located((By.ID, "feed-empty")))
    assert "No entry matches these filters" in empty.text
    empty.find_element(By.LINK_TEXT, "Clear the filters").click()
    wait.until(seen.presence_of_element_located((By.ID, f"proposal-{late.pk}")))


def test_the_proposals_page_lists_pending_first_and_decides_inline(live_server_url, browser, screenshot, workspace):
    member(workspace)
    waiting = provenance_proposal(workspace, level=3, title="The long drive")
    provenance_proposal(workspace, level=1, title="A small episode")  # approved at draft time
    second = provenance_proposal(workspace, level=3, title="The short drive")
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Proposals").click()
    wait.until(seen.visibility_of_element_located((By.ID, "proposals-heading")))
    watching(wait, browser)
    ids = [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, "ol.proposal-list > li")]
    assert ids[:2] == [f"proposal-{second.pk}", f"proposal-{waiting.pk}"]  # pending first, newest first
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
    screenshot("proposals-page")

    # approved inline, without leaving the page
    browser.find_element(By.CSS_SELECTOR, f"button.approve[data-proposal='{waiting.pk}']").click()
    wait.until(seen.text_to_be_present_in_element((By.ID, f"proposal-{waiting.pk}"), "Approved"))
    waiting.refresh_from_db()
    assert waiting.status == ProposalStatus.APPROVED
    # and the tabs count it at once (swapped out of band with the decision): one pending, two approved
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".status-tabs a.status-pending"), "Pending 1"))
    assert browser.find_element(By.CSS_SELECTOR, ".status-tabs a.status-approved").text == "Approved 2"
    assert browser.execute_script("return window.consoleErrors") == []

    # the Pending tab keeps only the one left; its title opens its page with the audit
    browser.find_element(By.CSS_SELECTOR, ".status-tabs a.status-pending").click()
    wait.until(seen.url_contains("status=pending"))
    assert [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, "ol.proposal-list > li")] == [
        f"proposal-{second.pk}"]
    browser.find_element(By.LINK_TEXT, "The short drive").click()
    wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.audit")))


def test_the_festinger_page_searches_the_world_overrides_a_conflict_and_opens_a_conversation(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    conflict = isa_isa_conflict(workspace)
    insert_fact(workspace=workspace, concept="rover", parent="vehicle", dimension="type", is_isa=True,
                confidence=0.8, source="gutask")
    insert_fact(workspace=workspace, concept="gnommoweb", parent="team_alpha", dimension="ownership",
                is_isa=False, confidence=0.7, source="gutask")
    detected(workspace, "agent-zero-1")
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Festinger").click()
    wait.until(seen.visibility_of_element_located((By.ID, "festinger-heading")))
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
    screenshot("festinger")

    # searched by concept
    box = browser.find_element(By.ID, "id_q")
    box.send_keys("gnommo")
    browser.find_element(By.CSS_SELECTOR, "form.world-filters button").click()
    wait.until(seen.url_contains("q=gnommo"))
    tokens = [e.get_attribute("data-token") for e in browser.find_elements(By.CSS_SELECTOR, "tr.concept")]
    assert tokens == ["gnommoweb"]
    assert "team_alpha" in browser.find_element(By.CSS_SELECTOR, "tr.concept").text

    # the conflict overridden: back on the same search, the conflict gone
    Select(browser.find_element(By.ID, f"decision-{conflict.pk}")).select_by_value("dismiss")
    browser.find_element(By.CSS_SELECTOR, f"button.override-button[data-conflict='{conflict.pk}']").click()
    wait.until(seen.text_to_be_present_in_element((By.CSS_SELECTOR, ".panel-conflicts"), "every fact found its place"))
    assert "q=gnommo" in browser.current_url
    conflict.refresh_from_db()
    assert conflict.status == "dismissed"

    # a conversation opens on its page
    browser.find_element(By.CSS_SELECTOR, "li.conversation-row[data-session='agent-zero-1'] a").click()
    wait.until(seen.url_contains("/festinger/conversations/agent-zero-1"))
    assert "Detections and mitigations" in browser.page_source


def test_the_lake_fits_both_widths_and_a_new_delta_arrives_live_without_console_errors(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    delta_create(workspace=workspace, content="the rover went north, past the " + "very " * 40 + "long crater",
                 tags=["kind:note", "topic:rover"], source="api")
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Lake").click()
    wait.until(seen.visibility_of_element_located((By.ID, "lake-newest")))
    watching(wait, browser)
    fresh = delta_create(workspace=workspace, content="a note written while the page is open", tags=["kind:note"])
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, f"#lake-newest li[data-id='{fresh.pk}']")))
    assert browser.execute_script("return window.consoleErrors") == []
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
        screenshot(f"lake-{width}")


def test_the_autonomy_page_fits_both_widths_and_a_new_decision_arrives_live_without_console_errors(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    autonomy_settings_update(workspace=workspace, mode="on", threshold=1.0)
    autonomy_sweep()
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Autonomy").click()
    wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.decisions-table tr.decision")))
    watching(wait, browser)
    before = AutonomyDecision.objects.filter(workspace=workspace).count()
    autonomy_sweep()
    after = AutonomyDecision.objects.filter(workspace=workspace).count()
    assert after > before
    wait.until(lambda driver: len(driver.find_elements(By.CSS_SELECTOR, "table.decisions-table tr.decision")) == after)
    # and the pressure panel's Why lists it too (it polls its partial)
    wait.until(lambda driver: len(driver.find_elements(By.CSS_SELECTOR, "#autonomy-why li.decision")) == min(
        after, DECISION_ROWS))
    assert browser.execute_script("return window.consoleErrors") == []
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
        screenshot(f"autonomy-{width}")
