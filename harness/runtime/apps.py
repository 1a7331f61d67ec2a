from django.apps import AppConfig


class RuntimeConfig(AppConfig):
    name = "harness.runtime"
    label = "runtime"
