from django.apps import AppConfig


class ConductorConfig(AppConfig):
    name = "harness.conductor"
    label = "conductor"
