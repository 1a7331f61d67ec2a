"""REST endpoints of festinger, mounted under /v1/."""

urlpatterns = []
