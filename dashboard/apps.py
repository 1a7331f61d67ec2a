from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The operator's pages: the top layer, reading every app through its selectors and acting through
    its services."""

    name = "dashboard"
