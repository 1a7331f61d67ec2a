"""A session's fire streams its answer: AgentStream events carrying the text as the model writes it,
batched, in order and complete, followed by the committed turn; and the per-turn listener hook
other parts of the harness plug into."""

import json

import httpx
import pytest

from fathom.llm.scripted import Script
from fathom.services import apikey_create
from harness.fires.models import FireTurn
from harness.fires.services import fire_create, fire_run
from harness.fires.turn_stream import StreamedTurn
from harness.runtime.models import HarnessSettings, SessionEvent
from harness.runtime.services import harness_settings_get, message_send
from tests.conftest import wait_for
from tests.harness.support import read_sse, session_tick, wait_for_background_work

ANSWER = "The tide turns at noon, and the harbour empties by two; the boats wait for the evening."


def agent_stream(session) -> list[dict]:
    return [{"seq": seq, **data} for seq, data in SessionEvent.objects.filter(
        session=session, kind=SessionEvent.Kind.AGENT_STREAM).order_by("seq").values_list("seq", "data")]


def batch_ms(workspace, value: int) -> None:
    harness_settings_get(workspace_id=workspace.pk)
    HarnessSettings.objects.filter(workspace=workspace).update(stream_batch_ms=value)


def test_the_answer_streams_as_deltas_in_order_that_join_into_the_committed_text(workspace, session, scripted_llm):
    batch_ms(workspace, 0)  # every chunk its own event
    scripted_llm.reply(ANSWER, chunk_chars=7)
    message_send(session=session, content="When does the tide turn?")

    assert session_tick(session_id=session.pk) == "ended"

    events = [e for e in agent_stream(session) if e["phase"] == "main"]
    deltas = [e for e in events if "delta" in e]
    turn_event = next(e for e in events if "text" in e)
    assert [e["part"] for e in deltas] == list(range(len(deltas))) == list(range((len(ANSWER) + 6) // 7))
    assert "".join(e["delta"] for e in deltas) == ANSWER == turn_event["text"]
    assert {e["call_id"] for e in deltas} == {turn_event["call_id"]}
    assert max(e["seq"] for e in deltas) < turn_event["seq"]  # the committed turn follows its stream
    turn = FireTurn.objects.get(fire__session=session, phase="main")
    assert turn.text == ANSWER and turn.call_id == turn_event["call_id"]
    # the same model calls as before streaming (the answer, then the review pass), each streamed
    assert len(scripted_llm.sent) == 2 and all(r.stream for r in scripted_llm.sent)


def test_deltas_are_batched_the_first_at_once_the_rest_when_the_interval_allows(workspace, session, scripted_llm):
    batch_ms(workspace, 60_000)  # nothing between the first delta and the end of the call
    scripted_llm.reply(ANSWER, chunk_chars=3)
    message_send(session=session, content="When?")

    session_tick(session_id=session.pk)

    deltas = [e["delta"] for e in agent_stream(session) if "delta" in e and e["phase"] == "main"]
    assert deltas == [ANSWER[:3], ANSWER[3:]]


def test_a_fire_outside_a_session_streams_nothing_and_is_not_streamed(workspace, scripted_llm):
    scripted_llm.reply("an answer")
    fire = fire_create(workspace=workspace, mode="reactive", question="q")

    fire_run(fire_id=fire.pk)

    assert scripted_llm.sent[0].stream is False and not SessionEvent.objects.exists()


class Recorder:
    """A listener as another part of the harness would plug one in: it sees every chunk and the end."""

    seen: list = []

    def __init__(self, turn: StreamedTurn):
        self.turn = turn

    def feed(self, chunk):
        Recorder.seen.append(("chunk", self.turn.number, self.turn.phase, chunk.text))

    def close(self, completion):
        Recorder.seen.append(("close", self.turn.number, self.turn.phase, completion.text))


def test_listeners_named_in_settings_are_fed_each_model_turn_beside_agent_stream(workspace, session, scripted_llm,
                                                                                 settings):
    settings.FATHOM_TURN_STREAM_LISTENERS = [*settings.FATHOM_TURN_STREAM_LISTENERS,
                                             "tests.harness.fires.test_turn_stream.Recorder"]
    Recorder.seen = []
    scripted_llm.reply("short answer")
    message_send(session=session, content="q")

    session_tick(session_id=session.pk)

    assert [s for s in Recorder.seen if s[2] == "main"] == [
        ("chunk", 1, "main", "short "), ("chunk", 1, "main", "answer"), ("close", 1, "main", "short answer")]
    assert "".join(e.get("delta", "") for e in agent_stream(session) if e["phase"] == "main") == "short answer"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_sse_client_sees_the_answer_being_written_before_the_turn_ends(celery_worker, live_server_url, workspace,
                                                                          session):
    script = Script.install(workspace, roles=("main",))  # the judge's classifier answers offline
    script.reply(ANSWER, chunk_chars=8, chunk_delay=0.05).call_tool("skip", {"reason": "nothing to consolidate"})
    key = apikey_create(workspace=workspace, role="operator").secret
    headers = {"Authorization": f"Bearer {key}"}
    url = f"{live_server_url}/v1/sessions/{session.pk}/events?timeout=60"
    with httpx.Client(timeout=70, headers=headers) as client:
        with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as stream:
            client.post(f"{live_server_url}/v1/sessions/{session.pk}/messages", json={"content": "When?"})
            events = read_sse(stream, until="TurnEnded")

    streamed = [json.loads(e["data"])["data"] for e in events if e["event"] == "AgentStream"]
    deltas = [d for d in streamed if "delta" in d and d["phase"] == "main"]
    kinds = [e["event"] for e in events]
    assert len(deltas) > 1 and "".join(d["delta"] for d in deltas) == ANSWER
    assert [d["part"] for d in deltas] == list(range(len(deltas)))
    first_delta = next(i for i, e in enumerate(events) if e["event"] == "AgentStream" and "delta" in e["data"])
    assert first_delta < kinds.index("AssistantOutput") < kinds.index("TurnEnded")
    wait_for(lambda: session.fires.filter(status="finished").exists())
    wait_for_background_work(session)
