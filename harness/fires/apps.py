from django.apps import AppConfig


class FiresConfig(AppConfig):
    name = "harness.fires"
    label = "fires"
