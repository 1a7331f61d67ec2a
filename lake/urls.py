"""REST endpoints of lake, mounted under /v1/."""

urlpatterns = []
