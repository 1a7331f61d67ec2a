"""Admin lists traces (one row each, with counts and totals) and drills into a trace's span tree."""

import re

import pytest

from fathom.llm import Message, ToolSpec, complete
from fathom.tracing import span
from fathom.tracing.models import Trace

SEARCH = ToolSpec("search", "Search", {"type": "object", "properties": {"query": {"type": "string"}}})


@pytest.fixture
def admin_client_logged_in(client, django_user_model):
    user = django_user_model.objects.create_superuser("root@example.com", "root@example.com", "pw-12345678")
    client.force_login(user)
    return client


def test_the_admin_lists_one_row_per_trace_and_shows_its_span_tree(admin_client_logged_in, workspace, scripted_llm):
    scripted_llm.reply(tool_calls=[{"id": "t1", "name": "search"}], input_tokens=10, output_tokens=3)
    scripted_llm.reply("done", input_tokens=40, output_tokens=4)
    with span("trace.prompt", workspace=workspace, actor_id="fire:9") as root:
        first = complete(workspace=workspace, role="main", messages=[Message.user("q")], tools=[SEARCH])
        with span("worker.tool", call_id=first.tool_calls[0].id, tool="search"):
            pass
        complete(workspace=workspace, role="main", messages=[Message.user("q")], actor_id="verifier")
    scripted_llm.reply("alone")
    lone = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    listing = admin_client_logged_in.get("/admin/fathom/trace/")

    assert listing.status_code == 200
    page = listing.content.decode()
    assert page.count(root.trace_id) >= 1 and lone.trace_id in page
    row = re.search(rf"<tr>.*?{root.trace_id}.*?</tr>", page, re.S).group(0)
    cells = re.findall(r'<td class="field-(\w+)[^"]*">(.*?)</td>', row, re.S)
    values = dict(cells)
    assert (values["model_calls"], values["failed_calls"], values["tool_calls"]) == ("2", "0", "1")
    assert (values["tokens_in"], values["tokens_out"], values["actor_id"]) == ("50", "7", "fire:9")
    assert Trace.objects.filter(trace_id=root.trace_id).count() == 1

    pk = Trace.objects.get(trace_id=root.trace_id).pk
    detail = admin_client_logged_in.get(f"/admin/fathom/trace/{pk}/change/").content.decode()
    assert detail.count("<strong>llm.call</strong>") == 2 and "<strong>worker.tool</strong> [ok]" in detail
    assert "<strong>trace.prompt</strong> [ok]" in detail and f"trace {root.trace_id}" in detail
    assert "fire:9: 1 call(s)" in detail and "verifier: 1 call(s)" in detail
