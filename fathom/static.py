"""Static files, served by WhiteNoise, with a body ASGI can stream."""

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's responses iterate their file synchronously: under ASGI (uvicorn) Django warns that
    StreamingHttpResponse must consume synchronous iterators, and reads the whole file into memory in a
    thread. Under ASGI this reads it chunk by chunk in a thread, as an asynchronous iterator."""

    @staticmethod
    def serve(static_file, request):
        response = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest):
            response.streaming_content = _chunks(response.streaming_content)
        return response


async def _chunks(iterator):
    read = sync_to_async(next, thread_sensitive=False)
    while (chunk := await read(iterator, None)) is not None:
        yield chunk
