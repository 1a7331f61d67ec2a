"""Admin for the proxy's model table (saved through the service, so every proxy process uses it at once)."""

from django.contrib import admin

from fathom.admin_scoping import WorkspaceScopedAdmin
from festinger.proxy.models import ProxyRoute
from festinger.proxy.upstreams import routes_changed


@admin.register(ProxyRoute)
class ProxyRouteAdmin(WorkspaceScopedAdmin):
    list_display = ["name", "workspace", "upstream", "target", "enabled", "updated_at"]
    list_filter = ["upstream", "enabled", "workspace"]
    search_fields = ["name", "target"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        routes_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        routes_changed()
