from django.apps import AppConfig


class HarnessConfig(AppConfig):
    name = "harness"
