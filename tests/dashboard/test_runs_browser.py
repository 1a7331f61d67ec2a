"""The runs pages in headless Chromium: the runs list and a conductor run's page (its graph drawn) at
1024 and 1440 px without sideways scroll, each updating itself live without a console error, and the
loop view rendered as HTML with its cited ids as links. Screenshots: docs/screenshots (see conftest.py)."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as seen

from harness.conductor.models import Run
from harness.conductor.services import run_create
from harness.fires.services import fire_create
from lake.models import Delta
from tests.dashboard.support import fire_with_tools, member
from tests.dashboard.test_dashboard_browser import log_in
from tests.dashboard.test_operator_browser import CONSOLE_ERRORS, scrolls_sideways
from tests.dashboard.test_runs import three_step_run, three_steps_scripted
from tests.harness.conductor.conftest import conductor_script, driver, main_script  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def watching(wait, browser):
    """Once htmx is up, record every console error and htmx error from now on."""
    wait.until(lambda page: page.execute_script("return !!window.htmx"))
    browser.execute_script(CONSOLE_ERRORS)


def test_the_runs_page_fits_both_widths_and_shows_a_new_fire_live(
        live_server_url, browser, screenshot, workspace, driver, conductor_script, main_script):  # noqa: F811
    member(workspace)
    run = three_step_run(workspace, driver, conductor_script, main_script)
    fire_with_tools(main_script, workspace, question="what about the " + "very" * 40 + "long rover?")
    wait = log_in(browser, live_server_url)
    browser.find_element(By.LINK_TEXT, "Runs").click()
    wait.until(seen.visibility_of_element_located((By.ID, f"run-row-{run.pk}")))
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.fire-row")) == 4  # the question and three research fires
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
        screenshot(f"runs-{width}")

    # a fire that starts while the page is open appears on it, and nothing complains
    watching(wait, browser)
    fire = fire_create(workspace=workspace, mode="reactive", question="a fire started meanwhile")
    wait.until(seen.visibility_of_element_located((By.ID, f"fire-row-{fire.pk}")))
    assert browser.execute_script("return window.consoleErrors") == []

    # a filter
    browser.find_element(By.ID, "id_q").send_keys("meanwhile")
    browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
    wait.until(seen.url_contains("q=meanwhile"))
    assert [row.get_attribute("id") for row in browser.find_elements(By.CSS_SELECTOR, "tr.fire-row")] == [
        f"fire-row-{fire.pk}"]


def test_a_runs_page_draws_its_graph_and_follows_the_run_live(
        live_server_url, browser, screenshot, workspace, driver, conductor_script, main_script):  # noqa: F811
    member(workspace)
    three_steps_scripted(conductor_script, main_script)
    run = run_create(workspace=workspace, objective="Map the rover's route across the dunes")
    wait = log_in(browser, live_server_url)
    browser.get(f"{live_server_url}/runs/{run.pk}")
    wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, "button.deny")))  # Cancel, while it runs
    watching(wait, browser)

    # when the run is carried out, the page follows it without a reload
    driver.drain()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    wait.until(seen.text_to_be_present_in_element((By.ID, "run-status"), "completed"))
    assert browser.execute_script("return window.consoleErrors") == []
    assert not browser.find_elements(By.CSS_SELECTOR, "button.deny")

    # its graph: the conductor and three boxes, drawn, each researcher's a link to its fire
    graph = browser.find_element(By.CSS_SELECTOR, "figure.run-graph svg")
    assert graph.is_displayed() and graph.size["width"] > 300 and graph.size["height"] > 100
    assert len(graph.find_elements(By.CSS_SELECTOR, "g.node")) == 4
    assert len(graph.find_elements(By.CSS_SELECTOR, "path.edge")) == 4
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
        screenshot(f"run-{width}")
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.XPATH, "//h2[text()='Plan']"))
    screenshot("run-plan")
    fire_id = run.calls.get(item__number=3).fire_id
    browser.execute_script("arguments[0].scrollIntoView()", graph)
    graph.find_element(By.CSS_SELECTOR, "g.node[data-item='3'] a").click()
    wait.until(seen.url_contains(f"/loop/{fire_id}"))
    assert "item 3 (researcher)" in browser.find_element(By.CSS_SELECTOR, "p.research-of").text


def test_the_loop_view_is_rendered_and_its_cited_ids_open_the_lake(live_server_url, browser, screenshot,
                                                                    scripted_llm, workspace):
    member(workspace)
    cited = Delta.objects.create(workspace=workspace, content="the rover's log", tags=["kind:note"])
    fire = fire_with_tools(scripted_llm, workspace)
    fire.response = {**fire.response, "body": f"The rover went north [{cited.pk}].", "cited_ids": [cited.pk]}
    fire.save(update_fields=["response"])
    wait = log_in(browser, live_server_url)
    browser.get(f"{live_server_url}/loop/{fire.pk}")
    response = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, ".loop-response")))
    assert not browser.find_elements(By.CSS_SELECTOR, ".loop-response pre, .loop-writes pre, .loop-review pre")
    assert browser.find_element(By.CSS_SELECTOR, ".loop-writes dl.readable").is_displayed()
    assert "what about the rover?" in browser.find_element(By.CSS_SELECTOR, "table.work-set").text
    for width in (1024, 1440):
        browser.set_window_size(width, 900)
        assert scrolls_sideways(browser) == [], width
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.XPATH, "//h2[text()='Response']"))
    screenshot("loop-view")
    response.find_element(By.CSS_SELECTOR, f"dl.readable a[href='/lake/{cited.pk}']").click()
    wait.until(seen.url_contains(f"/lake/{cited.pk}"))
    assert "the rover's log" in browser.find_element(By.TAG_NAME, "main").text
