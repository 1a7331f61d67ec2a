from django.apps import AppConfig


class FathomConfig(AppConfig):
    name = "fathom"
    verbose_name = "Fathom platform"
