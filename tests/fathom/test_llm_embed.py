"""`fathom.llm.embed`: a registry model's embeddings. The offline model's are the project's embedder's;
an openai model's come from its own endpoint through the official SDK (against a local server speaking
OpenAI's wire protocol), retried as model calls are and traced as an `llm.embed` span."""

import pytest

from fathom.llm import client
from fathom.llm.errors import LLMAuthenticationError, LLMBadRequest, LLMError
from fathom.llm.services import model_create
from fathom.tracing.models import TraceEvent
from lake.embedders import get_embedder
from tests.fathom.wire import KEY, openai_error

TEXTS = ["a rover on the red plain", "green tea"]


def embedding_list(vectors, tokens=5):
    return {"object": "list", "model": "text-embedding-3-small", "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "data": [{"object": "embedding", "index": index, "embedding": vector}
                     for index, vector in reversed(list(enumerate(vectors)))]}  # out of order: sorted by index


@pytest.fixture
def embedder_model(workspace, wire):
    return model_create(workspace=workspace, name="house-embedder", provider="openai", model="text-embedding-3-small",
                        base_url=f"{wire.url}/v1", api_key=KEY).name


def test_the_offline_model_embeds_with_the_projects_embedder(workspace):
    answer = client.embed(workspace=workspace, model="offline", texts=TEXTS)
    assert answer.vectors == get_embedder().embed(TEXTS) and answer.provider == "offline"
    assert answer.model == get_embedder().name and answer.usage.input_tokens > 0
    event = TraceEvent.objects.get(workspace=workspace, kind="llm.embed.completed")
    assert event.provider == "offline" and event.input_tokens == answer.usage.input_tokens
    assert event.payload["texts"] == 2


def test_an_openai_model_embeds_with_its_endpoint_and_a_500_is_retried(workspace, wire, embedder_model):
    wire.respond(*openai_error(500, "The server had an error"))
    wire.respond(200, embedding_list([[1.0, 0.0], [0.0, 1.0]], tokens=7))

    answer = client.embed(workspace=workspace, model=embedder_model, texts=TEXTS, actor_id="test:embed")

    assert answer.vectors == [[1.0, 0.0], [0.0, 1.0]] and answer.usage.input_tokens == 7
    assert answer.provider == "openai" and answer.model == "text-embedding-3-small"
    assert [body for body in wire.bodies] == [
        {"model": "text-embedding-3-small", "input": TEXTS, "encoding_format": "float"}] * 2
    event = TraceEvent.objects.get(workspace=workspace, kind="llm.embed.completed")
    assert event.actor_id == "test:embed" and event.payload["attempts"] == 2


def test_a_401_fails_at_once_with_the_providers_message(workspace, wire, embedder_model):
    wire.always(*openai_error(401, "Incorrect API key provided"))
    with pytest.raises(LLMAuthenticationError, match="Incorrect API key provided"):
        client.embed(workspace=workspace, model=embedder_model, texts=TEXTS)
    assert len(wire.requests) == 1


def test_a_provider_without_embeddings_is_a_bad_request(workspace):
    with pytest.raises(LLMBadRequest, match="does not support embeddings") as raised:
        client.embed(workspace=workspace, model="anthropic:claude-sonnet-4-5", texts=TEXTS)
    assert raised.value.http_status == 400


def broken_embedder():
    class Broken:
        name = "broken:v0"

        def embed(self, texts):
            raise RuntimeError("the embedding service is down")
    return Broken()


def test_the_offline_embedders_failure_is_a_model_error(workspace, settings):
    settings.FATHOM_EMBEDDER_LOADER = "tests.fathom.test_llm_embed.broken_embedder"
    with pytest.raises(LLMError, match="the embedder broken:v0 failed: the embedding service is down"):
        client.embed(workspace=workspace, model="offline", texts=TEXTS)
