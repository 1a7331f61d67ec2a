"""Images in messages are named by media hash; the bytes live elsewhere (the lake). The function
named by settings.FATHOM_MEDIA_RESOLVER, `(workspace_id, media_hash) -> (bytes, media_type)`, fetches
them for providers that need the bytes."""

import base64

from django.conf import settings
from django.utils.module_loading import import_string

from fathom.llm.errors import LLMBadRequest
from fathom.llm.types import ImageRef


def image_base64(workspace_id: int, image: ImageRef) -> tuple[str, str]:
    """(base64 data, media type) of an image."""
    if not settings.FATHOM_MEDIA_RESOLVER:
        raise LLMBadRequest("a message carries an image but no FATHOM_MEDIA_RESOLVER is configured to fetch it")
    data, media_type = import_string(settings.FATHOM_MEDIA_RESOLVER)(workspace_id, image.media_hash)
    return base64.b64encode(data).decode(), media_type or image.media_type
