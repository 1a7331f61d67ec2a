from django.contrib import admin

from fathom.admin_scoping import ReadOnlyAdmin
from harness.autonomy.models import ProducerRun


@admin.register(ProducerRun)
class ProducerRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "workspace", "producer", "mode", "origin", "status", "read", "model_calls", "created_at"]
    list_filter = ["producer", "status", "origin", "workspace"]
