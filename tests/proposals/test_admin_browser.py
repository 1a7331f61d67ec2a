"""An operator in a real browser: headless Chromium logs into admin and clicks Approve."""


import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from proposals.models import Decision, ProposalStatus, Routine
from proposals.services import proposal_draft
from tests.browser import operator_logs_in
from tests.proposals.conftest import routine_payload


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
