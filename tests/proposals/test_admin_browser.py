"""An operator in a real browser: headless Chromium logs into admin and clicks Approve."""

import shutil
import tempfile

import pytest
from django.contrib.auth.models import User
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from proposals.models import Decision, ProposalStatus, Routine
from proposals.services import proposal_draft
from tests.proposals.conftest import routine_payload

CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = "chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


@pytest.fixture
def browser():
    """Headless Chromium through the system's chromedriver. Nothing is downloaded: a missing browser
    fails the test with what to install (CI's .ci/run installs them)."""
    binary = next((path for name in CHROMIUM if (path := shutil.which(name))), None)
    driver_path = shutil.which(CHROMEDRIVER)
    if binary is None or driver_path is None:
        pytest.fail("headless Chromium is needed: apt-get install -y chromium chromium-driver "
                    f"(found browser={binary}, driver={driver_path})")
    profile = tempfile.mkdtemp(prefix="fathom-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def operator_logs_in(browser, live_server, next_path: str) -> None:
    """A superuser operator is created and logs into admin, landing on `next_path`."""
    User.objects.create_superuser("operator@example.com", "operator@example.com", "a long passphrase")
    browser.get(f"{live_server.url}/admin/login/?next={next_path}")
    browser.find_element(By.NAME, "username").send_keys("operator@example.com")
    browser.find_element(By.NAME, "password").send_keys("a long passphrase")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()


@pytest.mark.slow
def test_an_operator_logs_in_and_clicks_approve(live_server, browser, workspace):
    proposal = proposal_draft(workspace=workspace, tool="routines", title="Morning review",
                              payload=routine_payload(), producer="fire:f1")
    wait = WebDriverWait(browser, 20)

    operator_logs_in(browser, live_server, "/admin/proposals/proposal/")
    approve = wait.until(expected_conditions.element_to_be_clickable(
        (By.CSS_SELECTOR, f"button.approve-button[data-proposal='{proposal.pk}']")))
    approve.click()

    message = wait.until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert f"Proposal #{proposal.pk} approved" in message.text
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED
    assert Decision.objects.get(proposal=proposal).decided_by == "operator:user:operator@example.com"
    assert Routine.objects.filter(workspace=workspace).count() == 1
    # The row no longer offers Approve.
    assert not browser.find_elements(By.CSS_SELECTOR, f"button.approve-button[data-proposal='{proposal.pk}']")
