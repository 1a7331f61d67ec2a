"""Festinger's proxy through the official `ollama` client (and plain HTTP where the client hides the
wire): a fake Ollama upstream speaking NDJSON, and the registry's offline model with no Ollama at all."""

import base64
import hashlib
import json
import threading
import time

import httpx
import ollama
import pytest

from fathom.llm.scripted import Script
from fathom.tracing.models import TraceEvent
from festinger import cache
from festinger.proxy.upstreams import proxy_route_save
from festinger.recollection import RECOLLECTION_EVENT
from festinger.services import insert_fact
from lake.models import Media
from tests.conftest import wait_for

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image bytes").decode()


# --- the small routes -----------------------------------------------------------------------------------

def test_root_says_ollama_is_running_for_get_and_head(proxy):
    assert httpx.get(proxy).text == "Ollama is running"
    head = httpx.head(proxy)
    assert head.status_code == 200 and head.content == b""


def test_version_is_the_upstreams(proxy):
    assert httpx.get(f"{proxy}/api/version").json() == {"version": "0.12.3"}


def test_version_without_ollama_is_the_api_the_proxy_speaks(offline_proxy):
    assert httpx.get(f"{offline_proxy}/api/version").json()["version"]


def test_tags_list_ollamas_models_and_the_registrys(proxy, workspace):
    proxy_route_save(workspace=workspace, name="house-model", upstream="registry", target="offline")
    listed = ollama.Client(host=proxy).list()
    names = [model.model for model in listed.models]
    assert names[0] == "llama3.2:latest" and listed.models[0].details.family == "llama"
    assert "offline" in names and "house-model" in names


def test_tags_on_a_fresh_stack_without_ollama_list_the_offline_model(offline_proxy):
    assert "offline" in [model.model for model in ollama.Client(host=offline_proxy).list().models]


def test_show_ps_embed_and_embeddings_pass_through_to_ollama(proxy, fake_ollama):
    client = ollama.Client(host=proxy)
    shown = client.show("llama3.2")
    assert shown.details.family == "llama" and "tools" in shown.capabilities
    assert client.ps().models[0].model == "llama3.2:latest"
    embedded = client.embed(model="llama3.2", input=["one", "two"])
    assert embedded.embeddings == [[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    assert client.embeddings(model="llama3.2", prompt="one").embedding == [0.5, 0.25]
    assert [path for _, path, _ in fake_ollama.requests if path.startswith("/api/embed")] == [
        "/api/embed", "/api/embeddings"]


def test_show_of_a_registry_model(offline_proxy):
    shown = ollama.Client(host=offline_proxy).show("offline")
    assert shown.details.family == "offline"


# --- chat and generate through a real Ollama ------------------------------------------------------------

def test_chat_streams_ndjson_as_the_upstream_sends_it(proxy, fake_ollama):
    fake_ollama.reply_chat("Hello from llama", chunks=4)
    parts = list(ollama.Client(host=proxy).chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}],
                                                stream=True))
    assert "".join(part.message.content for part in parts) == "Hello from llama"
    assert len(parts) == 5 and [part.done for part in parts] == [False] * 4 + [True]
    last = parts[-1]
    assert last.done_reason == "stop" and last.eval_count == 7 and last.prompt_eval_count == 11
    assert last.total_duration == 5_000_000 and last.eval_duration == 2_500_000


def test_chat_without_stream_is_one_object_and_every_field_goes_upstream(proxy, fake_ollama):
    tool_calls = [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]
    fake_ollama.reply_chat("", tool_calls=tool_calls, thinking="Let me check the weather.")
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                                "parameters": {"type": "object", "properties": {
                                                    "city": {"type": "string"}}, "required": ["city"]}}}]
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    answer = ollama.Client(host=proxy).chat(
        model="llama3.2", stream=False, tools=tools, format=schema, think=True, keep_alive="10m",
        options={"temperature": 0.2, "num_ctx": 4096, "seed": 7},
        messages=[{"role": "user", "content": "What is in this picture?", "images": [PIXEL]},
                  {"role": "assistant", "content": "", "tool_calls": tool_calls},
                  {"role": "tool", "content": "12 degrees", "tool_name": "get_weather"}])
    assert answer.message.tool_calls[0].function.name == "get_weather"
    assert answer.message.tool_calls[0].function.arguments == {"city": "Oslo"}
    assert answer.message.thinking == "Let me check the weather."
    assert answer.done and answer.done_reason == "stop" and answer.eval_count == 7
    sent = fake_ollama.chat_bodies()[0]
    assert sent["messages"][0]["images"] == [PIXEL]
    assert sent["messages"][1]["tool_calls"] == tool_calls and sent["messages"][2]["tool_name"] == "get_weather"
    assert sent["tools"] == tools and sent["format"] == schema and sent["think"] is True
    assert sent["keep_alive"] == "10m" and sent["options"] == {"temperature": 0.2, "num_ctx": 4096, "seed": 7}
    assert sent["stream"] is False


def test_generate_streams_and_answers_whole_with_context(proxy, fake_ollama):
    fake_ollama.reply_chat("Once upon a time", chunks=3).reply_chat("The end")
    client = ollama.Client(host=proxy)
    parts = list(client.generate(model="llama3.2", prompt="Tell a story", stream=True))
    assert "".join(part.response for part in parts) == "Once upon a time" and parts[-1].context == [1, 2, 3]
    whole = client.generate(model="llama3.2", prompt="And then?", context=[1, 2, 3], format="json",
                            system="You tell stories.")
    assert whole.response == "The end" and whole.done_reason == "stop"
    sent = fake_ollama.chat_bodies()[1]
    assert sent["context"] == [1, 2, 3] and sent["format"] == "json" and sent["system"] == "You tell stories."


def test_a_raw_prompt_goes_upstream_untouched(proxy, fake_ollama):
    fake_ollama.reply_chat("ok")
    answer = ollama.Client(host=proxy).generate(model="llama3.2", prompt="[INST] hello [/INST]", raw=True)
    assert answer.response == "ok"
    sent = fake_ollama.chat_bodies()[0]
    assert sent["prompt"] == "[INST] hello [/INST]" and sent["raw"] is True and "system" not in sent


def test_an_unknown_model_is_ollamas_404(proxy, offline_proxy):
    for url in (proxy, offline_proxy):
        with pytest.raises(ollama.ResponseError) as raised:
            ollama.Client(host=url).chat(model="nope", messages=[{"role": "user", "content": "hi"}])
        assert raised.value.status_code == 404
        assert raised.value.error == 'model "nope" not found, try pulling it first'


@pytest.mark.parametrize(("body", "message"), [
    (b"{not json", "invalid JSON"),
    (b"[1, 2]", "cannot unmarshal"),
    (b"{}", "model is required"),
    (b'{"model": "llama3.2", "messages": "hi"}', "cannot unmarshal messages"),
    (b'{"model": "llama3.2", "messages": [], "options": 3}', "cannot unmarshal options"),
])
def test_bad_bodies_are_ollamas_400(proxy, body, message):
    answer = httpx.post(f"{proxy}/api/chat", content=body)
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_unknown_paths_and_methods_answer_as_ollama_does(proxy):
    assert httpx.get(f"{proxy}/api/nothing").status_code == 404
    assert httpx.get(f"{proxy}/api/chat").status_code == 405


def test_a_client_that_leaves_mid_stream_cancels_the_upstream_request(proxy, fake_ollama):
    fake_ollama.endless("and again ")
    with httpx.stream("POST", f"{proxy}/api/chat", json={
            "model": "llama3.2", "messages": [{"role": "user", "content": "Count forever, varying the words"}]},
            headers={"X-Festinger-Session": "leaver"}) as answer:
        lines = answer.iter_lines()
        assert json.loads(next(lines))["message"]["content"] == "and again "
    assert fake_ollama.closed.wait(30)


def test_a_client_that_leaves_mid_stream_stops_the_registry_models_call(offline_proxy, workspace):
    script = Script.install(workspace, roles=("proxy",))
    script.reply("word " * 5, chunk_chars=5, chunk_delay=2)  # five chunks, two seconds apart
    left = time.monotonic()
    try:
        with httpx.stream("POST", f"{offline_proxy}/api/chat", json={
                "model": f"scripted-{script.name}", "messages": [{"role": "user", "content": "Talk on"}]}) as answer:
            assert json.loads(next(answer.iter_lines()))["message"]["content"] == "word "
            left = time.monotonic()
        # the model call is abandoned at its next chunk, its span marked cancelled: not read to the end, and
        # not only once the proxy failed to write the next chunk to the client (two seconds later again)
        wait_for(lambda: TraceEvent.objects.filter(workspace=workspace, kind="festinger.proxy.call.completed",
                                                   payload__cancelled=True).exists())
        assert time.monotonic() - left < 3.5
    finally:
        script.reset()


# --- the offline model (no Ollama, no key) ---------------------------------------------------------------

def test_the_offline_model_answers_chat_and_generate_streamed_and_not(offline_proxy):
    client = ollama.Client(host=offline_proxy)
    whole = client.chat(model="offline", messages=[{"role": "user", "content": "What do you know about rovers?"}])
    assert whole.done and whole.message.role == "assistant" and whole.message.content
    parts = list(client.chat(model="offline", messages=[{"role": "user", "content": "hello"}], stream=True))
    assert parts[-1].done and "".join(part.message.content for part in parts)
    generated = client.generate(model="offline", prompt="hello")
    assert generated.done and generated.response


def test_a_registry_model_gets_the_images_through_the_lake(offline_proxy, workspace):
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()
    answer = ollama.Client(host=offline_proxy).chat(model="offline", messages=[
        {"role": "user", "content": "What is in this picture?", "images": [png]}])
    assert answer.done
    assert Media.objects.filter(workspace=workspace, hash=hashlib.sha256(base64.b64decode(png)).hexdigest()).exists()
    bad = httpx.post(f"{offline_proxy}/api/chat", json={"model": "offline", "stream": False, "messages": [
        {"role": "user", "content": "and this?", "images": ["not base64!"]}]})
    assert bad.status_code == 400 and "invalid image" in bad.json()["error"]


# --- recollections --------------------------------------------------------------------------------------

def recalls_gnommoweb(workspace):
    """The world holds gnommoweb ISA repo and has seen it often enough to recall it."""
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    world = cache.world(workspace.pk)
    for _ in range(3):
        world.count("gnommoweb gnommoweb")



def test_a_recollection_is_prepended_to_the_forwarded_system_prompt_once(proxy, fake_ollama, workspace):
    recalls_gnommoweb(workspace)
    fake_ollama.reply_chat("Sure.")
    ollama.Client(host=proxy).chat(model="llama3.2", messages=[
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Please update gnommoweb to use FastAPI instead"}])
    system = fake_ollama.chat_bodies()[0]["messages"][0]
    assert system["role"] == "system" and system["content"].count("<recollection>") == 1
    assert "gnommoweb: [type] repo" in system["content"] and system["content"].endswith("You are an agent.")


class ThreadNoted:
    """Model middleware that notes the thread each `before` runs in."""

    threads: list[str] = []

    def before(self, request):
        self.threads.append(threading.current_thread().name)


def test_the_middleware_runs_on_the_event_loop_unless_a_cache_needs_the_database(proxy, fake_ollama, workspace,
                                                                               settings):
    settings.FATHOM_MODEL_MIDDLEWARE = [*settings.FATHOM_MODEL_MIDDLEWARE, f"{__name__}.ThreadNoted"]
    ThreadNoted.threads.clear()
    recalls_gnommoweb(workspace)
    cache.note_write(workspace.pk)  # a fact written: the next call reads the world again from the database
    client = ollama.Client(host=proxy)
    for _ in range(2):
        fake_ollama.reply_chat("Sure.")
        client.chat(model="llama3.2", messages=[{"role": "user", "content": "Please update gnommoweb"}])
    first, second = ThreadNoted.threads
    assert first.startswith("festinger-proxy") and not second.startswith("festinger-proxy")
    assert all("gnommoweb: [type] repo" in body["messages"][0]["content"] for body in fake_ollama.chat_bodies())


def test_a_fact_written_between_two_calls_is_in_the_second_prompt(proxy, fake_ollama, workspace):
    recalls_gnommoweb(workspace)
    client = ollama.Client(host=proxy)
    fake_ollama.reply_chat("Sure.")
    client.chat(model="llama3.2", messages=[{"role": "user", "content": "Please update gnommoweb"}])
    insert_fact(workspace=workspace, concept="gnommoweb", parent="platform", dimension="team", is_isa=False,
                confidence=0.9, source="gutask")  # committed: the proxy reads the world again from the database
    fake_ollama.reply_chat("Sure.")
    client.chat(model="llama3.2", messages=[{"role": "user", "content": "Please update gnommoweb"}])

    first, second = (body["messages"][0]["content"] for body in fake_ollama.chat_bodies())
    assert "gnommoweb: [type] repo" in first and "platform" not in first
    assert "gnommoweb: [team] platform [type] repo" in second


def test_the_trace_of_a_proxied_call_keeps_the_recollection_its_prompt_received(proxy, fake_ollama, workspace,
                                                                              celery_worker):
    recalls_gnommoweb(workspace)
    fake_ollama.reply_chat("Sure.")
    ollama.Client(host=proxy, headers={"X-Festinger-Session": "agent-7"}).chat(model="llama3.2", messages=[
        {"role": "user", "content": "Please update gnommoweb to use FastAPI instead"}])
    # written by the middleware's `after`, by the worker, once the client has its answer
    wait_for(lambda: TraceEvent.objects.filter(workspace=workspace, kind=RECOLLECTION_EVENT).exists())
    event = TraceEvent.objects.get(workspace=workspace, kind=RECOLLECTION_EVENT)
    assert event.name == "festinger.proxy.call" and event.actor_id == "festinger:proxy"
    assert event.payload["session"] == "agent-7" and event.payload["recalled"] == ["gnommoweb"]
    assert event.payload["block"] == fake_ollama.chat_bodies()[0]["messages"][0]["content"]  # what was forwarded
