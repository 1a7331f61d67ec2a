from django.apps import AppConfig


class QualityConfig(AppConfig):
    name = "harness.quality"
    label = "quality"
