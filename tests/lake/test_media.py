"""The media store through REST, and an uploaded image opened by see_image in a fire."""

import hashlib
import json

import pytest

from lake.models import Media
from lake.services import delta_create

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x01" * 16


def upload(api, data: bytes):
    return api.post("/v1/media", data, content_type="application/octet-stream")


def test_an_image_is_stored_once_and_read_back_by_its_hash(api, workspace):
    first = upload(api, PNG)
    again = upload(api, PNG)

    digest = hashlib.sha256(PNG).hexdigest()
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["hash"] == again.json()["hash"] == digest
    assert (first.json()["media_type"], first.json()["size"]) == ("image/png", len(PNG))
    assert Media.objects.filter(workspace=workspace).count() == 1
    read = api.get(f"/v1/media/{digest}")
    assert read.status_code == 200 and read["Content-Type"] == "image/png" and read.content == PNG


def test_the_type_comes_from_the_bytes_not_the_header(api):
    response = api.post("/v1/media", WEBP, content_type="image/png")
    assert response.status_code == 201 and response.json()["media_type"] == "image/webp"


@pytest.mark.parametrize(("body", "status", "message"), [
    (b"", 400, "the body is empty"),
    (b"%PDF-1.7 not a picture", 400, "not a PNG, JPEG, GIF or WebP image"),
    (b"\xff\xd8\xff" + b"\x00" * 2048, 413, "larger than 1,024 bytes"),
])
def test_bad_uploads_are_refused_saying_why_and_store_nothing(api, settings, body, status, message):
    settings.FATHOM_MEDIA_MAX_BYTES = 1024
    response = upload(api, body)
    assert response.status_code == status and message in response.json()["error"]["message"]
    assert not Media.objects.exists()


def test_an_unknown_hash_is_404(api):
    response = api.get(f"/v1/media/{'0' * 64}")
    assert response.status_code == 404 and "no image with media hash" in response.json()["error"]["message"]


def test_a_viewer_reads_but_cannot_upload(api_client_for, workspace):
    viewer = api_client_for(workspace, role="viewer")
    assert upload(viewer, PNG).status_code == 403


def test_see_image_opens_an_uploaded_image_for_the_next_model_call(api, workspace, scripted_llm):
    from harness.fires.services import fire_create, fire_run

    digest = upload(api, PNG).json()["hash"]
    delta_create(workspace=workspace, content="the harbour at dusk", media_hash=digest)
    scripted_llm.call_tool("see_image", {"media_hash": digest}, id="see")
    scripted_llm.reply(tool_calls=[{"name": "respond", "arguments": {"body": "a harbour"}}]).call_tool("skip")

    fire = fire_run(fire_id=fire_create(workspace=workspace, mode="reactive", question="what is in the photo?").pk)

    tool_result = next(m for m in scripted_llm.sent[1].messages if m.role == "tool")
    assert json.loads(tool_result.content)["media_type"] == "image/png"
    images = [image for m in scripted_llm.sent[1].messages for image in m.images]
    assert [(i.media_hash, i.media_type) for i in images] == [(digest, "image/png")]
    assert fire.stop_reason == "responded"
