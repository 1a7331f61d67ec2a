"""An empty completion (neither text nor a tool call) is a provider error, retried with the model
layer's policy, never a turn: the fire fails naming it after the policy's attempts, not after the
turn cap."""

import pytest

from harness.fires.models import Fire, FireTurn
from harness.runtime.models import SessionEvent
from harness.runtime.services import harness_settings_get, message_send
from tests.fathom.wire import chat
from tests.harness.support import session_tick


@pytest.fixture(autouse=True)
def quick_backoff(settings):
    settings.FATHOM_LLM_BACKOFF_SECONDS, settings.FATHOM_LLM_MAX_BACKOFF_SECONDS = 0.01, 0.05


def test_a_model_answering_empty_completions_fails_the_fire_after_the_retry_policy(model, session, settings):
    # given a model (the real openai SDK against a local server) that answers every call empty
    model.always(200, chat(None))
    message_send(session=session, content="when is high tide?")
    # when the session ticks
    assert session_tick(session_id=session.pk) == "failed"
    # then the fire failed with the typed provider error, after the policy's attempts, with no turn
    fire = Fire.objects.get(session=session)
    assert (fire.status, fire.stop_reason) == ("failed", "error")
    assert fire.error.startswith("llm_empty_completion: ")
    assert len(model.requests) == settings.FATHOM_LLM_MAX_ATTEMPTS
    assert harness_settings_get(workspace_id=session.workspace_id).max_turns_per_fire > settings.FATHOM_LLM_MAX_ATTEMPTS
    assert not FireTurn.objects.filter(fire=fire).exists() and fire.model_calls == 0


def test_a_message_answered_by_empty_completions_ends_with_a_failed_fire_naming_it(
        scripted_llm, api, session, settings):
    # given a scripted model whose every answer the retry policy allows is empty
    for _ in range(settings.FATHOM_LLM_MAX_ATTEMPTS):
        scripted_llm.reply()
    scripted_llm.reply("never asked for")
    # when a message is posted over REST and its session ticks, as the worker's task would
    response = api.post(f"/v1/sessions/{session.pk}/messages", {"content": "hello"}, format="json")
    assert response.status_code == 202, response.content
    assert session_tick(session_id=session.pk) == "failed"
    # then the message's fire failed, and says it was the empty completion
    (fire,) = api.get("/v1/fires").json()["results"]
    body = api.get(f"/v1/fires/{fire['id']}").json()
    assert (body["status"], body["stop_reason"], body["turns"]) == ("failed", "error", [])
    assert body["error"].startswith("llm_empty_completion: ") and "neither text nor a tool call" in body["error"]
    assert scripted_llm.pending == 1 and len(scripted_llm.sent) == settings.FATHOM_LLM_MAX_ATTEMPTS
    failure = SessionEvent.objects.get(session=session, kind="TurnFailure")
    assert "llm_empty_completion" in failure.data["error"]
