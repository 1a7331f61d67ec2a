"""The operator's first hour in headless Chromium: an invalid edit keeps the operator's text and its
panel open with the error; an inline approval empties "Waiting for you"; a live update raises no
console error; no page scrolls sideways at 1024 px; the proposal page shows the payload as approved
with the audit's payload column. Screenshots: docs/screenshots (see conftest.py)."""

import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as seen
from selenium.webdriver.support.select import Select

from harness.autonomy.services import autonomy_settings_update, autonomy_sweep
from harness.fires.services import fire_create
from proposals.models import ProposalStatus
from tests.dashboard.support import fire_with_tools, member, provenance_proposal
from tests.dashboard.test_dashboard_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONSOLE_ERRORS = """
window.consoleErrors = [];
const original = console.error;
console.error = (...parts) => { window.consoleErrors.push(parts.map(String).join(" ")); original(...parts); };
for (const name of ["htmx:oobErrorNoTarget", "htmx:targetError", "htmx:swapError", "htmx:responseError"]) {
  document.body.addEventListener(name, () => window.consoleErrors.push(name));
}
"""


def live(wait, browser):
    wait.until(lambda driver: driver.execute_script("return !!(window.htmx && document.querySelector('[sse-connect]'))"))
    browser.execute_script(CONSOLE_ERRORS)


def scrolls_sideways(browser) -> list[str]:
    """The elements that stick out to the right of the window (none when nothing scrolls sideways)."""
    return browser.execute_script("""
        const width = document.documentElement.clientWidth;
        if (document.documentElement.scrollWidth <= width) return [];
        return [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > width + 1)
            .map(e => e.tagName + "." + e.className + "#" + e.id).slice(0, 10);""")


def test_an_invalid_edit_keeps_the_text_open_and_an_inline_approval_empties_waiting_for_you(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    proposal = provenance_proposal(workspace, level=3, title="The long drive")
    wait = log_in(browser, live_server_url)
    live(wait, browser)
    assert proposal.title in browser.find_element(By.ID, "side-proposals").text

    # when the operator approves an edit that is not JSON
    entry = browser.find_element(By.ID, f"proposal-{proposal.pk}")
    entry.find_element(By.CSS_SELECTOR, "details.edit > summary").click()
    box = entry.find_element(By.ID, f"payload-{proposal.pk}")
    box.clear()
    box.send_keys('{"from_ids": [oops')
    entry.find_element(By.CSS_SELECTOR, "button.edit-approve").click()

    # then the edit is still there, its panel open, the error beside it; nothing was decided
    error = wait.until(seen.visibility_of_element_located((By.ID, f"payload-error-{proposal.pk}")))
    assert "not valid JSON" in error.text
    entry = browser.find_element(By.ID, f"proposal-{proposal.pk}")
    assert entry.find_element(By.CSS_SELECTOR, "details.edit").get_attribute("open") is not None
    assert entry.find_element(By.ID, f"payload-{proposal.pk}").get_property("value") == '{"from_ids": [oops'
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING
    browser.execute_script("arguments[0].scrollIntoView()", entry)
    screenshot("edit-kept")

    # when it approves inline, "Waiting for you" lets the proposal go without a reload
    entry.find_element(By.CSS_SELECTOR, "button.approve").click()
    wait.until(lambda _: not browser.find_element(By.ID, "side-proposals").is_displayed())
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED
    assert browser.execute_script("return window.consoleErrors") == []


def test_live_updates_raise_no_console_error(live_server_url, browser, screenshot, scripted_llm, workspace):
    member(workspace)
    fire_with_tools(scripted_llm, workspace)  # the feed is not empty: there is no empty note to remove
    wait = log_in(browser, live_server_url)
    live(wait, browser)
    fire = fire_create(workspace=workspace, mode="reactive", question="a live one")
    wait.until(seen.presence_of_element_located((By.ID, f"fire-{fire.pk}")))
    proposal = provenance_proposal(workspace, level=3, title="A live proposal")
    wait.until(seen.presence_of_element_located((By.ID, f"proposal-{proposal.pk}")))
    assert browser.execute_script("return window.consoleErrors") == []


def test_no_page_scrolls_sideways_at_1024_px(live_server_url, browser, screenshot, scripted_llm, workspace):
    member(workspace)
    fire = fire_with_tools(scripted_llm, workspace, question="what about the " + "very" * 40 + "long rover?")
    proposal = provenance_proposal(workspace, level=3)
    log_in(browser, live_server_url)
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        for path in ("/", f"/proposals/{proposal.pk}", f"/loop/{fire.pk}", f"/fires/{fire.pk}/why"):
            browser.get(f"{live_server_url}{path}")
            assert scrolls_sideways(browser) == [], (width, path)
        browser.get(f"{live_server_url}/")
        screenshot(f"feed-{width}")


def test_the_proposal_page_shows_the_payload_as_approved_and_the_audit_its_payloads(
        live_server_url, browser, screenshot, workspace):
    member(workspace)
    proposal = provenance_proposal(workspace, level=3, title="The edited era")
    wait = log_in(browser, live_server_url)
    browser.get(f"{live_server_url}/proposals/{proposal.pk}")
    box = wait.until(seen.visibility_of_element_located((By.ID, "id_payload")))
    edited = dict(proposal.payload, summary="edited by the operator")
    box.clear()
    box.send_keys(json.dumps(edited))
    box.find_element(By.XPATH, "following-sibling::button").click()
    approved = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "pre.payload-approved")))
    assert "edited by the operator" in approved.text
    row = browser.find_element(By.CSS_SELECTOR, "table.audit tr.decision")
    row.find_element(By.CSS_SELECTOR, "td.decision-payload summary").click()
    assert "edited by the operator" in row.find_element(By.CSS_SELECTOR, "td.decision-payload pre").text
    screenshot("proposal-approved")


def test_the_lake_is_searched_and_a_delta_opened_with_its_provenance(live_server_url, browser, screenshot,
                                                                      workspace):
    member(workspace)
    episode = provenance_proposal(workspace, level=1, title="The rover era")
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Lake").click()
    search = wait.until(seen.visibility_of_element_located((By.ID, "lake-q")))
    search.send_keys("rover note")
    Select(browser.find_element(By.ID, "lake-mode")).select_by_value("text")
    browser.find_element(By.CSS_SELECTOR, "form.lake-search button").click()
    hit = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "li.lake-row.role-hit a")))
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
    screenshot("lake")
    hit.click()
    wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "ul.provenance-up")))
    provenance = episode.result_ref.removeprefix("delta:")
    up = browser.find_element(By.CSS_SELECTOR, "ul.provenance-up")
    if provenance not in browser.current_url:  # a moment: its episode holds it; open it and go down
        up.find_element(By.CSS_SELECTOR, f"a[href='/lake/{provenance}']").click()
        wait.until(seen.url_contains(provenance))
    down = browser.find_element(By.CSS_SELECTOR, "ul.provenance-down")
    assert len(down.find_elements(By.TAG_NAME, "a")) == 2
    assert scrolls_sideways(browser) == []
    screenshot("delta")


def test_the_autonomy_page_fits_1024_px_and_says_why(live_server_url, browser, screenshot, workspace):
    member(workspace)
    autonomy_settings_update(workspace=workspace, mode="on", threshold=1.0)
    autonomy_sweep()
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Autonomy").click()
    row = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "table.decisions-table tr.decision")))
    assert "below the threshold: pressure" in row.text
    assert "below the threshold" in browser.find_element(By.CSS_SELECTOR, ".why-now").text
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
    screenshot("autonomy")
