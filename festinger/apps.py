from django.apps import AppConfig


class FestingerConfig(AppConfig):
    name = "festinger"
