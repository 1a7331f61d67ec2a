from django.apps import AppConfig


class AutonomyConfig(AppConfig):
    name = "harness.autonomy"
    label = "autonomy"
