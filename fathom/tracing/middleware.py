"""Every HTTP request is one tracing scope: its spans are written in one INSERT when it ends."""

from fathom.tracing.spans import scope


class TracingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with scope():
            return self.get_response(request)
