from django.apps import AppConfig


class FathomConfig(AppConfig):
    name = "fathom"
    verbose_name = "Fathom platform"

    def ready(self):
        from fathom.tracing import celery as tracing_celery

        tracing_celery.connect()
