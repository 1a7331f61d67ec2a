"""Embeddings through the proxy: Ollama's /api/embed and /api/embeddings for registry models (the offline
model's are the project's embedder's; an OpenAI model's its own endpoint's) in Ollama's exact shapes,
through the official `ollama` client; OpenAI's /v1/embeddings through the official `openai` client,
from a registry model or the fake Ollama; bad input in each API's error shape."""

import math

import httpx
import ollama
import openai
import pytest

from fathom.llm.services import model_create
from festinger.proxy.upstreams import proxy_route_save
from lake.embedders import get_embedder
from tests.fathom.wire import KEY, WireServer, openai_error

ROVER, TEA = "a rover on the red plain", "green tea"


@pytest.fixture
def openai_wire(workspace):
    """A local server speaking OpenAI's API, and a registry model `house-embedder` calling it."""
    server = WireServer().start()
    model_create(workspace=workspace, name="house-embedder", provider="openai", model="text-embedding-3-small",
                 base_url=f"{server.url}/v1", api_key=KEY)
    yield server
    server.stop()


def embedding_list(vectors, tokens):
    return {"object": "list", "model": "text-embedding-3-small", "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "data": [{"object": "embedding", "index": index, "embedding": vector} for index, vector in enumerate(vectors)]}


def unit(vector):
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


# --- Ollama's /api/embed and /api/embeddings ---------------------------------------------------------------

def test_embed_with_the_offline_model_is_the_projects_embedder_in_ollamas_shape(offline_proxy, settings):
    client = ollama.Client(host=offline_proxy)
    expected = get_embedder().embed([ROVER, TEA])

    answer = client.embed(model="offline", input=[ROVER, TEA, ROVER])

    assert answer.model == "offline" and len(answer.embeddings) == 3
    assert answer.embeddings[0] == pytest.approx(expected[0]) and answer.embeddings[1] == pytest.approx(expected[1])
    assert answer.embeddings[2] == answer.embeddings[0]
    assert len(answer.embeddings[0]) == settings.EMBEDDING_DIMENSIONS
    assert answer.total_duration > 0 and answer.prompt_eval_count > 0
    raw = httpx.post(f"{offline_proxy}/api/embed", json={"model": "offline", "input": TEA}).json()
    assert set(raw) == {"model", "embeddings", "total_duration", "prompt_eval_count"}


def test_embed_dimensions_shorten_and_normalise_as_ollama_does(offline_proxy):
    short = ollama.Client(host=offline_proxy).embed(model="offline", input=ROVER, dimensions=192)
    assert short.embeddings[0] == pytest.approx(unit(get_embedder().embed([ROVER])[0][:192]))
    assert len(short.embeddings[0]) == 192 and sum(value * value for value in short.embeddings[0]) == pytest.approx(1.0)


def test_nothing_to_embed_answers_empty_as_ollama_does(offline_proxy):
    client = ollama.Client(host=offline_proxy)
    assert client.embed(model="offline", input="").embeddings == []
    assert client.embeddings(model="offline", prompt="").embedding == []


def test_the_older_embeddings_route_answers_one_embedding(offline_proxy):
    answer = httpx.post(f"{offline_proxy}/api/embeddings", json={"model": "offline", "prompt": ROVER})
    assert answer.status_code == 200 and set(answer.json()) == {"embedding"}
    assert ollama.Client(host=offline_proxy).embeddings(model="offline", prompt=ROVER).embedding == pytest.approx(
        get_embedder().embed([ROVER])[0])


def test_a_route_of_admins_table_names_the_embedder_an_agent_asks_for(offline_proxy, workspace):
    proxy_route_save(workspace=workspace, name="nomic-embed-text", upstream="registry", target="offline")
    answer = ollama.Client(host=offline_proxy).embed(model="nomic-embed-text:latest", input=TEA)
    assert answer.model == "nomic-embed-text:latest"
    assert answer.embeddings[0] == pytest.approx(get_embedder().embed([TEA])[0])


def test_an_openai_registry_model_embeds_with_its_own_endpoint(offline_proxy, openai_wire):
    openai_wire.respond(200, embedding_list([[0.6, 0.8, 0.0], [0.0, 0.6, 0.8]], tokens=6))

    answer = ollama.Client(host=offline_proxy).embed(model="house-embedder", input=["one", "two"])

    assert answer.embeddings == [[0.6, 0.8, 0.0], [0.0, 0.6, 0.8]] and answer.prompt_eval_count == 6
    _, path, headers, body = openai_wire.requests[0]
    assert path == "/v1/embeddings" and headers["authorization"] == f"Bearer {KEY}"
    assert body == {"model": "text-embedding-3-small", "input": ["one", "two"], "encoding_format": "float"}


def test_the_providers_error_is_ollamas_with_its_status(offline_proxy, openai_wire):
    openai_wire.respond(*openai_error(401, "Incorrect API key provided"))
    with pytest.raises(ollama.ResponseError) as raised:
        ollama.Client(host=offline_proxy).embed(model="house-embedder", input="one")
    assert raised.value.status_code == 401 and "Incorrect API key provided" in raised.value.error
    assert len(openai_wire.requests) == 1  # a 401 is not retried


def test_a_model_whose_provider_has_no_embeddings_is_ollamas_400(offline_proxy):
    with pytest.raises(ollama.ResponseError) as raised:
        ollama.Client(host=offline_proxy).embed(model="anthropic:claude-sonnet-4-5", input="one")
    assert raised.value.status_code == 400 and "does not support embeddings" in raised.value.error


def test_an_unknown_model_is_ollamas_404_on_both_routes(offline_proxy):
    client = ollama.Client(host=offline_proxy)
    for call in (lambda: client.embed(model="nope", input="x"), lambda: client.embeddings(model="nope", prompt="x")):
        with pytest.raises(ollama.ResponseError) as raised:
            call()
        assert raised.value.status_code == 404 and raised.value.error == 'model "nope" not found, try pulling it first'


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/api/embed", {"model": "offline", "input": 3}, "invalid input type"),
    ("/api/embed", {"model": "offline", "input": ["a", 1]}, "invalid input type"),
    ("/api/embed", {"model": "offline", "input": {"text": "a"}}, "invalid input type"),
    ("/api/embed", {"model": "offline", "input": "a", "dimensions": "8"}, "cannot unmarshal dimensions"),
    ("/api/embed", {"model": "offline", "input": "a", "dimensions": -1}, "cannot unmarshal dimensions"),
    ("/api/embed", {"input": "a"}, "model is required"),
    ("/api/embed", {"model": 3, "input": "a"}, "cannot unmarshal model"),
    ("/api/embeddings", {"model": "offline", "prompt": ["a"]}, "cannot unmarshal prompt"),
    ("/api/embeddings", {"prompt": "a"}, "model is required"),
])
def test_bad_embedding_requests_are_ollamas_400(offline_proxy, path, body, message):
    answer = httpx.post(f"{offline_proxy}{path}", json=body)
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_a_body_that_is_not_json_is_ollamas_400(offline_proxy):
    answer = httpx.post(f"{offline_proxy}/api/embed", content=b"{nope")
    assert answer.status_code == 400 and "invalid JSON" in answer.json()["error"]


# --- OpenAI's /v1/embeddings -------------------------------------------------------------------------------

def openai_client(url):
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def test_openai_embeddings_of_the_offline_model_in_base64_and_floats(proxy):
    client = openai_client(proxy)
    expected = get_embedder().embed([ROVER, TEA])

    packed = client.embeddings.create(model="offline", input=[ROVER, TEA])  # the client asks for base64
    floats = client.embeddings.create(model="offline", input=ROVER, encoding_format="float")

    assert [item.index for item in packed.data] == [0, 1] and packed.model == "offline"
    assert packed.data[0].embedding == pytest.approx(expected[0], abs=1e-6)  # float32 on the wire
    assert packed.data[1].embedding == pytest.approx(expected[1], abs=1e-6)
    assert floats.data[0].embedding == pytest.approx(expected[0])
    assert packed.usage.prompt_tokens == packed.usage.total_tokens > 0
    short = client.embeddings.create(model="offline", input=ROVER, dimensions=192, encoding_format="float")
    assert short.data[0].embedding == pytest.approx(unit(expected[0][:192]))


def test_openai_embeddings_from_the_ollama_upstream(proxy, fake_ollama):
    answer = openai_client(proxy).embeddings.create(model="llama3.2", input=["one", "two"], dimensions=3,
                                                    encoding_format="float")
    assert [item.embedding for item in answer.data] == [[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    assert answer.model == "llama3.2" and answer.usage.prompt_tokens == 3
    assert [(path, body) for _, path, body in fake_ollama.requests if path == "/api/embed"] == [
        ("/api/embed", {"model": "llama3.2", "input": ["one", "two"], "dimensions": 3})]


def test_openai_embeddings_errors_are_openais(proxy, fake_ollama):
    client = openai_client(proxy)
    with pytest.raises(openai.NotFoundError) as raised:  # the fake Ollama's own 404
        client.embeddings.create(model="missing-model", input="x")
    assert 'model "missing-model" not found' in raised.value.message
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model="anthropic:claude-sonnet-4-5", input="x")
    assert "does not support embeddings" in raised.value.message


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "offline"}, "input"),
    ({"model": "offline", "input": []}, "input"),
    ({"model": "offline", "input": [101, 2023]}, "input"),
    ({"model": "offline", "input": [[101, 2023]]}, "input"),
    ({"model": "offline", "input": "x", "encoding_format": "hex"}, "encoding_format"),
    ({"model": "offline", "input": "x", "dimensions": -2}, "dimensions"),
    ({"input": "x"}, None),
])
def test_bad_openai_embedding_requests_are_openais_400(proxy, body, param):
    answer = httpx.post(f"{proxy}/v1/embeddings", json=body)
    error = answer.json()["error"]
    assert answer.status_code == 400 and error["type"] == "invalid_request_error" and error["param"] == param
