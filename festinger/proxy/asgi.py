"""The proxy's own ASGI server: `uvicorn festinger.proxy.asgi:application` (what `fathom up` runs on
FATHOM_PROXY_HOST:FATHOM_PROXY_PORT)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fathom.settings")
django.setup()

from festinger.proxy.serve import own_port_app  # noqa: E402 - the apps must be loaded first

application = own_port_app()
