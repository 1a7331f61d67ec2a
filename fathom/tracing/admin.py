from django.contrib import admin

from fathom.tracing.models import TraceEvent


@admin.register(TraceEvent)
class TraceEventAdmin(admin.ModelAdmin):
    """Read-only: traces are written by the code they watch."""

    list_display = ["at", "kind", "workspace", "trace_id", "actor_id", "model", "input_tokens", "output_tokens",
                    "cost", "duration_ms", "status"]
    list_filter = ["kind", "status", ("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["=trace_id", "=run_id", "=task_id", "=call_id", "actor_id"]
    list_select_related = ["workspace"]
    date_hierarchy = "at"
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
