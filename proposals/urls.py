"""REST endpoints of proposals, mounted under /v1/."""

urlpatterns = []
