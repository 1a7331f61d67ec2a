"""An operator in headless Chromium: the Festinger page, "Run resolution now", and a decomposition
decided on a conflict's page."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support.wait import WebDriverWait

from festinger.models import Conflict, Edge, ResolutionRun
from tests.browser import operator_logs_in
from tests.festinger.conftest import isa_isa_conflict


@pytest.mark.slow
def test_an_operator_runs_resolution_and_decomposes_a_conflict(live_server, browser, workspace):
    conflict = isa_isa_conflict(workspace)
    wait = WebDriverWait(browser, 20)

    operator_logs_in(browser, live_server, "/admin/festinger/conflict/overview/")
    row = wait.until(expected_conditions.visibility_of_element_located(
        (By.CSS_SELECTOR, f"tr[data-workspace='{workspace.slug}']")))
    assert row.find_element(By.CSS_SELECTOR, "td.pending").text == "1"
    assert "never" in row.find_element(By.CSS_SELECTOR, "td.last-run").text
    row.find_element(By.CSS_SELECTOR, "input[value='Run resolution now']").click()
    message = wait.until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert "Resolution run #" in message.text and ResolutionRun.objects.filter(workspace=workspace).exists()

    browser.get(f"{live_server.url}/admin/festinger/conflict/{conflict.pk}/change/")
    Select(wait.until(expected_conditions.visibility_of_element_located((By.NAME, "decision")))).select_by_value(
        "decompose")
    browser.find_element(By.NAME, "existing_dimension").send_keys("artifact-type")
    browser.find_element(By.NAME, "new_dimension").send_keys("deployment-type")
    browser.find_element(By.CSS_SELECTOR, "input[value='Apply decision']").click()

    message = wait.until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert "decompose applied" in message.text
    assert Conflict.objects.get(pk=conflict.pk).status == "resolved"
    assert sorted(Edge.objects.filter(concept__token="gnommoweb").values_list("parent__token", "dimension__token")) == [
        ("container", "deployment-type"), ("repo", "artifact-type")]
