"""The proxy's OpenAI-compatible routes through the official `openai` client, the proxy under the main
port (/v1/festinger/proxy/..., Bearer API keys, one workspace per key), the shared token of the own
port, and the loop record's REST endpoint."""

import json

import httpx
import ollama
import openai
import pytest

from festinger import cache
from festinger.loops.guard import loop_events_record
from festinger.proxy.serve import own_port_app
from festinger.proxy.upstreams import proxy_route_save
from festinger.services import world_ensure
from tests.festinger.proxy_support import serving

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def openai_client(url, **kwargs):
    return openai.OpenAI(base_url=f"{url}/v1", api_key=kwargs.pop("api_key", "unused"), max_retries=0, **kwargs)


# --- OpenAI's chat completions ---------------------------------------------------------------------------

def test_openai_chat_completion_whole_and_streamed_from_ollama(proxy, fake_ollama):
    fake_ollama.reply_chat("Hello there", chunks=3).reply_chat("Streamed hello", chunks=3)
    client = openai_client(proxy)
    whole = client.chat.completions.create(model="llama3.2", temperature=0.1, max_tokens=50,
                                           messages=[{"role": "user", "content": "hi"}])
    assert whole.choices[0].message.content == "Hello there" and whole.choices[0].finish_reason == "stop"
    assert whole.usage.prompt_tokens == 11 and whole.usage.completion_tokens == 7
    assert fake_ollama.chat_bodies()[0]["options"] == {"temperature": 0.1, "num_predict": 50}
    chunks = list(client.chat.completions.create(model="llama3.2", stream=True,
                                                 stream_options={"include_usage": True},
                                                 messages=[{"role": "user", "content": "hi"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Streamed hello"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.completion_tokens == 7


def test_openai_tool_calls_round_trip(proxy, fake_ollama):
    fake_ollama.reply_chat("", tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}])
    client = openai_client(proxy)
    answer = client.chat.completions.create(
        model="llama3.2", tools=[WEATHER_TOOL], messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "rain"}])
    call = answer.choices[0].message.tool_calls[0]
    assert answer.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Oslo"}
    sent = fake_ollama.chat_bodies()[0]
    assert sent["tools"] == [WEATHER_TOOL]
    assert sent["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"city": "Bergen"}


def test_openai_streams_from_the_offline_model_and_errors_are_in_openais_shape(proxy):
    client = openai_client(proxy)
    chunks = list(client.chat.completions.create(model="offline", stream=True,
                                                 messages=[{"role": "user", "content": "hello"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert "not found" in raised.value.message
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="llama3.2", messages="hi")


def test_openai_models_lists_what_the_proxy_serves(proxy, workspace):
    proxy_route_save(workspace=workspace, name="house-model", upstream="registry", target="offline")
    names = [model.id for model in openai_client(proxy).models.list()]
    assert names[0] == "llama3.2:latest" and {"offline", "house-model"} <= set(names)


def test_a_route_of_admins_table_names_an_ollama_model_differently(proxy, workspace, fake_ollama):
    proxy_route_save(workspace=workspace, name="agent-brain", upstream="ollama", target="qwen3:8b")
    fake_ollama.reply_chat("from qwen")
    answer = ollama.Client(host=proxy).chat(model="agent-brain", messages=[{"role": "user", "content": "hi"}])
    assert answer.message.content == "from qwen" and fake_ollama.chat_bodies()[0]["model"] == "qwen3:8b"


# --- the own port's token, and the main port's mount ------------------------------------------------------

def test_the_own_port_asks_for_the_shared_token_when_one_is_set(transactional_db, workspace, settings):
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    with serving(own_port_app(workspace_slug=workspace.slug, token="s3cret")) as url:
        assert httpx.get(f"{url}/api/tags").status_code == 401
        assert httpx.get(f"{url}/api/tags", headers={"Authorization": "Bearer wrong"}).status_code == 401
        listed = ollama.Client(host=url, headers={"Authorization": "Bearer s3cret"}).list()
        assert "offline" in [model.model for model in listed.models]
    cache.forget(workspace.pk)


def test_a_proxy_port_of_a_workspace_that_does_not_exist_says_so(transactional_db, settings):
    settings.OLLAMA_HOST = ""
    with serving(own_port_app(workspace_slug="no-such-workspace", token="")) as url:
        answer = httpx.get(f"{url}/api/tags")
    assert answer.status_code == 503 and "no-such-workspace" in answer.json()["error"]


def test_the_main_port_serves_the_proxy_to_api_keys_of_their_own_workspace(main_port, workspace, keys, fake_ollama):
    mine, theirs = keys
    proxy_route_save(workspace=workspace, name="house-model", upstream="registry", target="offline")
    base = f"{main_port}/v1/festinger/proxy"

    assert httpx.get(f"{base}/api/tags").status_code == 401
    assert httpx.get(f"{base}/api/tags", headers={"Authorization": "Bearer fth_nope_nope"}).status_code == 401
    listed = ollama.Client(host=base, headers={"Authorization": mine}).list()
    assert "house-model" in [model.model for model in listed.models]
    other = ollama.Client(host=base, headers={"Authorization": theirs})
    assert "house-model" not in [model.model for model in other.list().models]
    with pytest.raises(ollama.ResponseError) as raised:
        other.chat(model="house-model", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 404

    fake_ollama.reply_chat("through the main port")
    answer = ollama.Client(host=base, headers={"Authorization": mine}).chat(
        model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert answer.message.content == "through the main port"
    bad = httpx.post(f"{base}/api/chat", content=b"{nope", headers={"Authorization": mine})
    assert bad.status_code == 400 and "invalid JSON" in bad.json()["error"]["message"]  # the API's envelope
    assert httpx.get(f"{main_port}/v1/health").status_code in (200, 503)  # Django still answers the rest


# --- the loop record over REST ---------------------------------------------------------------------------

def test_loops_lists_the_workspaces_detections_newest_first_with_filters(api, workspace, other_workspace):
    loop_events_record(workspace_id=workspace.pk, session="one", events=[
        {"kind": "repeated_output", "level": 1, "detail": {"output": "same"}},
        {"kind": "temperature_boost", "level": 1, "detail": {"from": 0.7, "to": 1.0}}], model="llama3.2")
    loop_events_record(workspace_id=workspace.pk, session="two", events=[
        {"kind": "tool_cycle", "level": 1, "detail": {"period": 2}}])
    loop_events_record(workspace_id=other_workspace.pk, session="one", events=[
        {"kind": "breaker_opened", "level": 4, "detail": {}}])

    rows = api.get("/v1/festinger/loops").json()["results"]
    assert [row["kind"] for row in rows] == ["tool_cycle", "temperature_boost", "repeated_output"]
    assert rows[2]["detail"] == {"output": "same"} and rows[2]["model"] == "llama3.2"
    assert [row["kind"] for row in api.get("/v1/festinger/loops?session=one").json()["results"]] == [
        "temperature_boost", "repeated_output"]
    assert [row["session"] for row in api.get("/v1/festinger/loops?kind=tool_cycle").json()["results"]] == ["two"]
    bad = api.get("/v1/festinger/loops?kind=nonsense")
    assert bad.status_code == 400 and bad.json()["error"]["code"]


def test_the_main_port_serves_embeddings_and_choices_to_keys_of_their_own_workspace(
        main_port, workspace, keys, fake_ollama):
    mine, theirs = keys
    proxy_route_save(workspace=workspace, name="house-embedder", upstream="registry", target="offline")
    base = f"{main_port}/v1/festinger/proxy"

    assert httpx.post(f"{base}/api/embed", json={"model": "house-embedder", "input": "x"}).status_code == 401
    assert httpx.post(f"{base}/v1/embeddings", json={"model": "house-embedder", "input": "x"}).status_code == 401
    embedded = ollama.Client(host=base, headers={"Authorization": mine}).embed(model="house-embedder", input="x")
    assert len(embedded.embeddings) == 1
    with pytest.raises(ollama.ResponseError) as raised:
        ollama.Client(host=base, headers={"Authorization": theirs}).embed(model="house-embedder", input="x")
    assert raised.value.status_code == 404

    own = openai_client(base, api_key=mine.removeprefix("Bearer "))
    assert len(own.embeddings.create(model="house-embedder", input=["x", "y"]).data) == 2
    with pytest.raises(openai.NotFoundError):
        openai_client(base, api_key=theirs.removeprefix("Bearer ")).embeddings.create(model="house-embedder", input="x")
    bad = httpx.post(f"{base}/v1/embeddings", json={"model": "house-embedder", "input": []}, headers={"Authorization": mine})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "input"

    fake_ollama.reply_chat("one").reply_chat("two")
    answer = own.chat.completions.create(model="llama3.2", n=2, messages=[{"role": "user", "content": "hi"}])
    assert {choice.message.content for choice in answer.choices} == {"one", "two"}
    with pytest.raises(openai.BadRequestError) as raised:
        own.chat.completions.create(model="llama3.2", n=0, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.param == "n"
