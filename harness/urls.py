"""REST endpoints of harness, mounted under /v1/."""

urlpatterns = []
