"""Admin of conductor runs: each run with its agenda, calls and decisions, and its graph as a tree
(the same as GET /v1/runs/{id}/graph); the conductor's settings, editable (the terminal is off until
an operator turns it on here)."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from fathom.admin_scoping import WorkspaceScopedAdmin
from harness.conductor.models import AgendaItem, CapabilityCall, ConductorSettings, Decision, Run, RunEvent
from harness.conductor.selectors import run_graph
from harness.conductor.services import run_cancel


class AgendaItemInline(admin.TabularInline):
    model = AgendaItem
    extra = 0
    can_delete = False
    fields = ["number", "capability", "input", "depends_on", "state", "source", "merged", "result"]
    readonly_fields = fields


class CapabilityCallInline(admin.TabularInline):
    model = CapabilityCall
    extra = 0
    can_delete = False
    fields = ["call_id", "item", "worker", "status", "attempts", "fire", "model_calls", "runner", "result"]
    readonly_fields = fields


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    can_delete = False
    fields = ["number", "kind", "action", "reason", "payload", "error", "llm_call_id"]
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(WorkspaceScopedAdmin):
    list_display = ["id", "status", "workspace", "decisions_made", "created_at", "finished_at"]
    list_filter = ["status", "workspace"]
    search_fields = ["id", "objective", "trace_id"]
    readonly_fields = ["graph", *[f.name for f in Run._meta.fields]]
    inlines = [AgendaItemInline, CapabilityCallInline, DecisionInline]
    actions = ["cancel"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="graph (prompt -> conductor -> workers -> tools)")
    def graph(self, run):
        if run is None or run.pk is None:
            return "-"
        graph = run_graph(run=run)
        actors = format_html_join(", ", "{} ({} model calls)", ((a["actor_id"], a["model_calls"]) for a in graph["actors"]))
        conductor = graph["tree"]["children"][0]
        workers = format_html_join("", "<li>{} <code>{}</code> [{}]: {} model calls<ul>{}</ul></li>", (
            (w["worker"], w["call_id"], w["status"], w["model_calls"],
             format_html_join("", "<li>tool {} <code>{}</code> [{}]</li>",
                              ((t["name"], t["call_id"], t["status"]) for t in w["children"])))
            for w in conductor["children"]))
        return format_html(
            "<ul><li>prompt: {}<ul><li>conductor <code>{}</code>: {} model calls ({} bootstrap, {} decision)"
            "<ul>{}</ul></li></ul></li></ul><p>Model calls per actor: {}</p>",
            graph["tree"]["objective"][:300], conductor["actor_id"], conductor["model_calls"],
            graph["totals"]["bootstrap_calls"], graph["totals"]["decision_calls"], workers, actors or "none")

    @admin.action(description="Cancel the selected runs")
    def cancel(self, request, queryset):
        for run in queryset:
            run_cancel(run=run)


@admin.register(RunEvent)
class RunEventAdmin(WorkspaceScopedAdmin):
    list_display = ["run", "seq", "kind", "created_at"]
    list_filter = ["kind"]
    search_fields = ["run__id"]
    readonly_fields = ["workspace", "run", "seq", "kind", "data", "created_at"]

    def has_add_permission(self, request):
        return False


@admin.register(ConductorSettings)
class ConductorSettingsAdmin(WorkspaceScopedAdmin):
    list_display = ["workspace", "terminal_enabled", "terminal_network", "terminal_timeout_seconds", "max_steps",
                    "max_decisions"]
