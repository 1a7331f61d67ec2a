"""Traces in admin: the list of traces (one row each, with model calls, tool calls, tokens, cost), a
trace's page with its span tree and model calls per actor, and the raw events. All read-only:
traces are written by the code they watch."""

from django.contrib import admin
from django.db.models import Count, IntegerField, Max, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from fathom.admin_scoping import ReadOnlyAdmin, rows_visible_to
from fathom.tracing import selectors
from fathom.tracing.models import Trace, TraceEvent


@admin.register(TraceEvent)
class TraceEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "kind", "workspace", "trace_id", "actor_id", "model", "input_tokens", "output_tokens",
                    "cost", "duration_ms", "status"]
    list_filter = ["kind", "status", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["=trace_id", "=run_id", "=task_id", "=call_id", "actor_id"]
    list_select_related = ["workspace"]
    date_hierarchy = "at"
    show_full_result_count = False


def _in_trace(aggregate, output_field=None, **filters):
    rows = (TraceEvent.objects.filter(workspace=OuterRef("workspace"), trace_id=OuterRef("trace_id"), **filters)
            .order_by().values("trace_id").annotate(value=aggregate).values("value"))
    if output_field is None:
        return Coalesce(Subquery(rows, output_field=IntegerField()), 0)
    return Subquery(rows, output_field=output_field)


@admin.register(Trace)
class TraceAdmin(ReadOnlyAdmin):
    list_display = ["trace_id", "name", "workspace", "actor_id", "at", "ended", "model_calls", "failed_calls",
                    "tool_calls", "tokens_in", "tokens_out", "total_cost", "errors"]
    list_filter = ["name", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["=trace_id", "=run_id", "actor_id"]
    list_select_related = ["workspace"]
    date_hierarchy = "at"
    show_full_result_count = False
    fields = ["trace_id", "workspace", "name", "actor_id", "run_id", "at", "per_actor", "span_tree"]
    readonly_fields = fields

    def get_queryset(self, request):
        llm = selectors.LLM
        return rows_visible_to(request, selectors.trace_roots()).annotate(
            model_calls=_in_trace(Count("id"), name=llm, kind="llm.call.started"),
            failed_calls=_in_trace(Count("id"), name=llm, status="error"),
            tool_calls=_in_trace(Count("id"), name=selectors.TOOL, kind="worker.tool.call"),
            tokens_in=_in_trace(Sum("input_tokens"), name=llm),
            tokens_out=_in_trace(Sum("output_tokens"), name=llm),
            total_cost=_in_trace(Sum("cost"), output_field=TraceEvent._meta.get_field("cost"), name=llm),
            ended=_in_trace(Max("at"), output_field=TraceEvent._meta.get_field("at")),
            errors=_in_trace(Count("id"), status="error"),
        )

    @admin.display(ordering="model_calls")
    def model_calls(self, obj):
        return obj.model_calls

    @admin.display(ordering="failed_calls", description="failed")
    def failed_calls(self, obj):
        return obj.failed_calls

    @admin.display(ordering="tool_calls")
    def tool_calls(self, obj):
        return obj.tool_calls

    @admin.display(ordering="tokens_in", description="input tokens")
    def tokens_in(self, obj):
        return obj.tokens_in

    @admin.display(ordering="tokens_out", description="output tokens")
    def tokens_out(self, obj):
        return obj.tokens_out

    @admin.display(ordering="total_cost", description="cost ($)")
    def total_cost(self, obj):
        return obj.total_cost or 0

    @admin.display(ordering="ended")
    def ended(self, obj):
        return obj.ended

    @admin.display(ordering="errors", description="errors")
    def errors(self, obj):
        return obj.errors

    @admin.display(description="model calls per actor")
    def per_actor(self, obj):
        trace = selectors.trace_get(workspace=obj.workspace_id, trace_id=obj.trace_id)
        return format_html_join(
            mark_safe("<br>"), "{}: {} call(s), {} failed, {} in / {} out tokens, ${}",
            ((a["actor_id"] or "(none)", a["model_calls"], a["failed_model_calls"], a["input_tokens"],
              a["output_tokens"], a["cost"]) for a in trace["actors"]),
        ) or "no model calls"

    @admin.display(description="spans")
    def span_tree(self, obj):
        trace = selectors.trace_get(workspace=obj.workspace_id, trace_id=obj.trace_id)
        return format_html('<ul class="fathom-trace">{}</ul>', _nodes(trace["spans"]))


def _nodes(nodes) -> str:
    return format_html_join("", "<li>{}</li>", ((_node(node),) for node in nodes))


def _node(node) -> str:
    parts = [format_html("<strong>{}</strong> [{}]", node["name"], node["status"])]
    if node["duration_ms"] is not None:
        parts.append(format_html("{} ms", round(node["duration_ms"], 1)))
    for key in ("actor_id", "call_id", "task_id"):
        if node[key]:
            parts.append(format_html("{}={}", key, node[key]))
    if node["model"]:
        parts.append(format_html("{}:{} · {} in / {} out tokens · ${}", node["provider"], node["model"],
                                 node["input_tokens"], node["output_tokens"], node["cost"]))
    if node["error"]:
        parts.append(format_html('<span style="color:#ba2121">{}</span>', node["error"]))
    line = mark_safe(" · ".join(parts))
    events = format_html_join("", "<li><em>{}</em> {}</li>", ((e["kind"], e["payload"]) for e in node["events"]))
    children = _nodes(node["children"])
    inner = mark_safe(events + children)
    return format_html("{}<ul>{}</ul>", line, inner) if inner else line
