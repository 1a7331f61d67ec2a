"""One count everywhere: a wrapped fire's model calls per role read the same on its dashboard page,
in GET /v1/fires/{id} and in its trace (classifier, main, review, verifier), the fire's own counter
being its main and review calls."""

import re
from collections import Counter

from django.test import Client

from fathom.tracing.models import TraceEvent
from harness.fires.models import Fire
from harness.runtime.services import message_send
from tests.dashboard.support import member
from tests.harness.quality.conftest import classification, respond, verdict
from tests.harness.support import session_tick


def test_card_rest_and_trace_agree_on_the_calls_per_role(roles, session, workspace, api):
    # given a chat question answered and verified, the review pass skipping
    message_send(session=session, content="What is the capital of France?")
    roles.classifier.reply(classification("SIMPLE", "chat"))
    roles.main.reply(tool_calls=[respond()])
    roles.verifier.reply(verdict(0.9))
    roles.main.call_tool("skip", {"reason": "-"})
    assert session_tick(session_id=session.pk) == "ended"
    fire = Fire.objects.get(session=session)
    # when the trace, the REST read and the dashboard's page of the fire are read
    ended = TraceEvent.objects.filter(trace_id=fire.trace_id, name="llm.call").exclude(status="")
    in_trace = Counter(ended.values_list("payload__role", flat=True))
    body = api.get(f"/v1/fires/{fire.pk}").json()
    client = Client()
    client.force_login(member(workspace))
    page = client.get(f"/loop/{fire.pk}").content.decode()
    on_page = {role: int(calls) for role, calls in re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td><td>\d+\+\d+</td>", page)}
    # then each role has one count, wherever it is read
    assert dict(in_trace) == {"classifier": 1, "main": 1, "review": 1, "verifier": 1}
    assert {role: row["calls"] for role, row in body["calls_by_role"].items()} == dict(in_trace) == on_page
    assert body["calls_by_role"]["main"]["input_tokens"] == sum(
        ended.filter(payload__role="main").values_list("input_tokens", flat=True))
    assert body["model_calls"] == fire.model_calls == in_trace["main"] + in_trace["review"]
