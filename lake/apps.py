from django.apps import AppConfig


class LakeConfig(AppConfig):
    name = "lake"
