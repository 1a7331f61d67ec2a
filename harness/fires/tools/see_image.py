"""see_image(media_hash): open an image into context. Recall marks images inline as [image <hash>];
this call checks the image is one of this lake's and that the media store has its bytes, and the
next model call carries it as an image part (rendered by harness.fires.prompt through `images`)."""

import base64
import json

from django.conf import settings

from fathom.llm.media import image_base64
from fathom.llm.types import ImageRef
from fathom.transient import TRANSIENT_ERRORS
from harness.fires.tools.base import Tool, ToolContext, ToolError, register
from lake.selectors import deltas_list

DELTAS_SHOWN = 5


def run(ctx: ToolContext, args: dict):


    media_hash = args["media_hash"].strip().strip("[]").strip().removeprefix("image ").strip()
    carriers = list(deltas_list(workspace=ctx.workspace).filter(media_hash=media_hash)
                    .order_by("-created_at", "-id")[:DELTAS_SHOWN])
    if not carriers:
        raise ToolError(f"no image with media hash {media_hash!r} in this lake")
    if not settings.FATHOM_MEDIA_RESOLVER:
        raise ToolError("images cannot be opened here: no media store is configured (FATHOM_MEDIA_RESOLVER)")
    try:
        data, media_type = image_base64(ctx.workspace.pk, ImageRef(media_hash))
    except TRANSIENT_ERRORS:  # the fire's task retries and resumes; the model never reads a blip
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the store says, the model reads it
        raise ToolError(f"the media store could not load {media_hash!r}: {type(exc).__name__}: {exc}") from None
    return {"media_hash": media_hash, "media_type": media_type, "size_bytes": len(base64.b64decode(data)),
            "in_deltas": [{"id": d.id, "content": d.content} for d in carriers],
            "note": "the image is attached to your next turn; describe only what you see in it"}


def images(result: str) -> list:
    """The image a successful call opened, for the prompt."""
    opened = json.loads(result)
    return [ImageRef(opened["media_hash"], opened["media_type"])]


TOOL = register(Tool(
    name="see_image",
    description="Open an image by its media hash (recall shows images as [image <hash>]); it is attached to your "
                "next turn. Never describe an image you have not opened in this fire.",
    run=run,
    images=images,
    parameters={"type": "object", "required": ["media_hash"], "additionalProperties": False, "properties": {
        "media_hash": {"type": "string", "minLength": 1, "maxLength": 140},
    }},
))
