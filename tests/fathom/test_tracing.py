"""Tracing: spans nest by context, are written in bulk, survive exceptions, and model calls trace
themselves."""

from contextlib import nullcontext

import pytest

from fathom.llm import Message, ToolSpec, complete
from fathom.llm.errors import LLMAuthenticationError
from fathom.tracing import event, span
from fathom.tracing.models import TraceEvent


def events(trace_id):
    return list(TraceEvent.objects.filter(trace_id=trace_id).order_by("at", "id"))


def test_nested_spans_share_the_trace_and_name_their_parents(workspace):
    with span("trace.prompt", workspace=workspace, actor_id="session:1", run_id="run-1") as root:
        with span("fire.turn", turn=1) as turn:
            with span("worker.tool", call_id="call-9", tool="search") as tool:
                tool.set(result="3 rows")

    rows = events(root.trace_id)
    assert [r.kind for r in rows] == [
        "trace.prompt.received", "fire.turn.started", "worker.tool.call", "worker.tool.result",
        "fire.turn.completed", "trace.prompt.completed"]
    assert {r.trace_id for r in rows} == {root.trace_id} and {r.workspace_id for r in rows} == {workspace.pk}
    by_kind = {r.kind: r for r in rows}
    assert by_kind["fire.turn.started"].parent_span_id == root.span_id
    assert by_kind["worker.tool.call"].parent_span_id == turn.span_id
    assert by_kind["worker.tool.result"].payload == {"tool": "search", "result": "3 rows"}
    assert by_kind["worker.tool.result"].call_id == "call-9"
    # Ids given at the root are inherited all the way down.
    assert {r.run_id for r in rows} == {"run-1"} and {r.actor_id for r in rows} == {"session:1"}
    assert by_kind["trace.prompt.completed"].duration_ms >= by_kind["fire.turn.completed"].duration_ms


def test_spans_are_buffered_while_the_trace_runs_and_written_in_one_insert_at_its_end(
        workspace, django_assert_num_queries):
    with django_assert_num_queries(3) as at_the_end:  # savepoint, one INSERT, release
        with span("trace.prompt", workspace=workspace) as root:
            with django_assert_num_queries(0):
                for index in range(20):
                    with span("step", index=index):
                        event("step.note", index=index)

    assert sum("INSERT" in q["sql"] for q in at_the_end.captured_queries) == 1
    assert TraceEvent.objects.filter(trace_id=root.trace_id).count() == 2 + 20 * 3


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_a_flush_is_one_statement(workspace, django_assert_num_queries):
    with django_assert_num_queries(1) as flushed:
        with span("trace.prompt", workspace=workspace) as root:
            with django_assert_num_queries(0):
                for index in range(5):
                    with span("step", index=index):
                        pass

    assert "synchronous_commit" in flushed.captured_queries[0]["sql"]
    assert TraceEvent.objects.filter(trace_id=root.trace_id).count() == 12


def test_a_raising_block_still_writes_its_spans_marked_failed(workspace):
    with pytest.raises(ZeroDivisionError):
        with span("trace.prompt", workspace=workspace) as root:
            with span("fire.turn"):
                raise ZeroDivisionError("division by zero")

    rows = {r.kind: r for r in events(root.trace_id)}
    assert rows["fire.turn.failed"].status == "error" and "ZeroDivisionError" in rows["fire.turn.failed"].error
    assert rows["trace.prompt.failed"].status == "error"


def test_a_span_needs_a_workspace():
    with pytest.raises(ValueError, match="needs a workspace"):
        with span("orphan"):
            pass


SEARCH = ToolSpec("search", "Search", {"type": "object", "properties": {"query": {"type": "string"}}})


def test_a_sequence_of_model_and_tool_calls_is_a_complete_trace(workspace, scripted_llm):
    scripted_llm.call_tool("search", {"query": "q"}, id="t1").fail("authentication", "bad key")
    scripted_llm.reply("answer", input_tokens=7, output_tokens=2)

    with span("trace.prompt", workspace=workspace, actor_id="fire:1") as root:
        first = complete(workspace=workspace, role="main", messages=[Message.user("q")], tools=[SEARCH])
        with span("worker.tool", call_id=first.tool_calls[0].id, tool="search"):
            pass
        with pytest.raises(LLMAuthenticationError):
            complete(workspace=workspace, role="verifier", messages=[Message.user("check")], actor_id="verifier")
        chunks = []
        streamed = complete(workspace=workspace, role="main", messages=[Message.user("q")], stream=chunks.append)

    rows = events(root.trace_id)
    kinds = [r.kind for r in rows]
    assert kinds == [
        "trace.prompt.received",
        "llm.call.started", "llm.call.completed",
        "worker.tool.call", "worker.tool.result",
        "llm.call.started", "llm.call.failed",
        "llm.call.started", "llm.call.completed",
        "trace.prompt.completed",
    ]
    llm = [r for r in rows if r.name == "llm.call"]
    assert {r.parent_span_id for r in llm} == {root.span_id}
    assert [r.actor_id for r in llm] == ["fire:1", "fire:1", "verifier", "verifier", "fire:1", "fire:1"]
    assert llm[0].call_id == llm[1].call_id == first.call_id and first.trace_id == root.trace_id
    failed = llm[3]
    assert failed.status == "error" and "bad key" in failed.error
    last = llm[5]
    assert (last.input_tokens, last.output_tokens, last.provider) == (7, 2, "scripted")
    assert last.call_id == streamed.call_id and "".join(c.text for c in chunks) == "answer"
    assert llm[0].payload["last_user"] == "q" and llm[0].payload["tools"] == ["search"]
    # Every span has exactly one start and one end event, under the right parent.
    spans = {}
    for row in rows:
        spans.setdefault(row.span_id, []).append(row)
    assert all(len(pair) == 2 and pair[0].parent_span_id == pair[1].parent_span_id for pair in spans.values())
    tool = [r for r in rows if r.name == "worker.tool"]
    assert tool[0].parent_span_id == root.span_id and tool[1].status == "ok"
    assert len({r.span_id for r in llm}) == 3 and root.span_id not in {r.span_id for r in llm}


def test_a_model_call_outside_any_span_is_its_own_trace(workspace, scripted_llm):
    scripted_llm.reply("hi")

    completion = complete(workspace=workspace, role="main", messages=[Message.user("x")])

    rows = events(completion.trace_id)
    assert [r.kind for r in rows] == ["llm.call.started", "llm.call.completed"]
    assert rows[0].parent_span_id == ""


def test_the_writer_fills_every_column_of_the_table():
    from fathom.tracing.writer import COLUMNS

    fields = {f.column for f in TraceEvent._meta.concrete_fields if not f.primary_key}
    assert sorted(COLUMNS) == sorted(fields)


def test_a_model_call_made_by_a_tool_is_the_tools_child(workspace, scripted_llm):
    scripted_llm.reply("inner answer")

    with span("trace.prompt", workspace=workspace, actor_id="fire:2") as root:
        with span("fire.turn") as turn:
            with span("worker.tool", call_id="c1", tool="ask") as tool:
                inner = complete(workspace=workspace, role="verifier", messages=[Message.user("?")])

    parents = {r.name: r.parent_span_id for r in events(root.trace_id) if r.status}
    assert parents == {"llm.call": tool.span_id, "worker.tool": turn.span_id, "fire.turn": root.span_id,
                       "trace.prompt": ""}
    assert inner.trace_id == root.trace_id


@pytest.mark.parametrize("in_transaction", [
    pytest.param(True, id="inside-a-transaction", marks=pytest.mark.django_db),
    pytest.param(False, id="alone", marks=pytest.mark.django_db(transaction=True)),
])
def test_a_trace_that_cannot_be_written_is_logged_and_breaks_nothing(in_transaction, caplog):
    from django.db import transaction

    from fathom.models import Workspace
    from fathom.tracing import SpanContext, continue_trace

    workspace = Workspace.objects.create(slug="trace-write-fails", name="w")
    # A malformed remote parent (say, a hand-made Celery header) with a trace id too long for its column.
    parent = SpanContext(trace_id="f" * 40, span_id="0123456789abcdef", workspace_id=workspace.pk)

    with transaction.atomic() if in_transaction else nullcontext():
        with continue_trace(parent):
            with span("worker.tool", tool="x"):
                pass
        assert Workspace.objects.filter(pk=workspace.pk).exists()  # the connection still works

    assert "could not write 2 trace events" in caplog.text
    assert not TraceEvent.objects.filter(workspace=workspace).exists()
    with span("trace.prompt", workspace=workspace) as root:
        pass
    assert TraceEvent.objects.filter(trace_id=root.trace_id).count() == 2
