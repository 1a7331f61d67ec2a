import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")
django_application = get_asgi_application()

from django.conf import settings  # noqa: E402 - after the apps are loaded
from django.utils.module_loading import import_string  # noqa: E402

# Plain ASGI apps of the apps served beside Django under a path prefix (settings.FATHOM_ASGI_MOUNTS).
_mounts = [(prefix.rstrip("/"), import_string(path)()) for prefix, path in settings.FATHOM_ASGI_MOUNTS.items()]


async def application(scope, receive, send):
    if scope["type"] == "lifespan":  # Django has no lifespan; a mounted app may start with the server, and close
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                for _prefix, app in _mounts:
                    if hasattr(app, "startup"):
                        await app.startup()
            if message["type"] == "lifespan.shutdown":
                for _prefix, app in _mounts:
                    if hasattr(app, "close"):
                        await app.close()
            await send({"type": f"{message['type']}.complete"})
            if message["type"] == "lifespan.shutdown":
                return
    if scope["type"] == "http":
        for prefix, app in _mounts:
            if scope["path"] == prefix or scope["path"].startswith(prefix + "/"):
                await app(scope, receive, send)
                return
    await django_application(scope, receive, send)
