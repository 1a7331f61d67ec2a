"""The media store: images uploaded once, named by the SHA-256 of their bytes, read back by the model
layer (settings.FATHOM_MEDIA_RESOLVER names `media_resolve`)."""

import hashlib

from django.conf import settings
from django.db import IntegrityError, transaction

from fathom.errors import ApplicationError, NotFoundError
from lake.models import Media

# What the providers accept, told apart by the file's first bytes (never by what the client claims).
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def media_type_of(data: bytes) -> str:
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ApplicationError("the body is not a PNG, JPEG, GIF or WebP image")


def media_store(*, workspace, data: bytes) -> tuple[Media, bool]:
    """Keep the image (once: the same bytes return the row stored first). Returns (media, created)."""
    if not data:
        raise ApplicationError("the body is empty: send the image's bytes")
    if len(data) > settings.FATHOM_MEDIA_MAX_BYTES:
        raise ApplicationError(f"the image is larger than {settings.FATHOM_MEDIA_MAX_BYTES:,} bytes "
                               "(FATHOM_MEDIA_MAX_BYTES)", code="too_large", status_code=413)
    media_type = media_type_of(data)
    digest = hashlib.sha256(data).hexdigest()
    existing = Media.objects.filter(workspace=workspace, hash=digest).defer("data").first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return Media.objects.create(workspace=workspace, hash=digest, media_type=media_type, size=len(data),
                                        data=data), True
    except IntegrityError:  # the same image, uploaded twice at once
        return Media.objects.defer("data").get(workspace=workspace, hash=digest), False


def media_get(*, workspace_id: int, media_hash: str) -> Media:
    media = Media.objects.filter(workspace_id=workspace_id, hash=media_hash.strip().lower()).first()
    if media is None:
        raise NotFoundError(f"no image with media hash {media_hash!r} in this workspace")
    return media


def media_resolve(workspace_id: int, media_hash: str) -> tuple[bytes, str]:
    """settings.FATHOM_MEDIA_RESOLVER: (bytes, media type) of a workspace's image."""
    media = media_get(workspace_id=workspace_id, media_hash=media_hash)
    return bytes(media.data), media.media_type
