from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from fathom.api import llm, platform, traces

v1 = [
    path("health", platform.HealthView.as_view(), name="health"),
    path("workspace", platform.WorkspaceView.as_view(), name="workspace"),
    path("apikeys", platform.ApiKeyListCreateView.as_view(), name="apikeys"),
    path("apikeys/<int:key_id>/revoke", platform.ApiKeyRevokeView.as_view(), name="apikey-revoke"),
    path("llm/models", llm.ModelListCreateView.as_view(), name="llm-models"),
    path("llm/models/<str:name>", llm.ModelDetailView.as_view(), name="llm-model"),
    path("llm/models/<str:name>/test", llm.ModelTestView.as_view(), name="llm-model-test"),
    path("llm/roles", llm.RoleListView.as_view(), name="llm-roles"),
    path("llm/roles/<str:role>", llm.RoleDetailView.as_view(), name="llm-role"),
    path("traces", traces.TraceListView.as_view(), name="traces"),
    path("traces/<str:trace_id>", traces.TraceDetailView.as_view(), name="trace"),
    path("usage", traces.UsageView.as_view(), name="usage"),
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[], permission_classes=[]),
         name="docs"),
    path("", include("lake.urls")),
    path("", include("festinger.urls")),
    path("", include("proposals.urls")),
    path("", include("harness.runtime.urls")),
    path("", include("harness.fires.urls")),
    path("", include("harness.quality.urls")),
    path("", include("harness.conductor.urls")),
    path("", include("harness.autonomy.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/", include(v1)),
    # The operator's dashboard (the dashboard app) at the root.
    path("", include("dashboard.urls")),
]

handler400 = "fathom.api.errors.bad_request"
handler403 = "fathom.api.errors.permission_denied"
handler404 = "fathom.api.errors.page_not_found"
handler500 = "fathom.api.errors.server_error"
