"""A registry model's thinking through the proxy: Ollama's `think` (and OpenAI's `reasoning_effort`)
becomes the provider's own option, and the thinking comes back as Ollama's `thinking` and OpenAI's
`reasoning_content` / `reasoning`, streamed before the answer and whole, never inside the content.

The registry models stand on a local server speaking Anthropic's Messages API and OpenAI's chat
completions with `reasoning_content` (as vLLM and DeepSeek send it), read by the real `anthropic` and
`openai` SDKs; the clients are the official `ollama` and `openai` ones. The proxy streams from a
registry model even for a whole answer, so the server always answers with server-sent events (the
providers' whole answers are in tests/fathom/test_llm_thinking.py)."""

import httpx
import ollama
import openai
import pytest

from fathom.llm.scripted import Script
from fathom.llm.services import model_create
from fathom.llm.types import Completion
from festinger import cache
from festinger.loops.models import LoopEvent
from festinger.proxy.serve import own_port_app
from festinger.services import world_ensure
from tests.conftest import wait_for
from tests.fathom.wire import KEY, WireServer, chunk, message
from tests.festinger.proxy_support import serving
from tests.festinger.test_loops import kinds
from tests.festinger.test_proxy_openai_choices import openai_client, streamed_choices

QUESTION = [{"role": "user", "content": "What is six times seven?"}]
THOUGHT = ["Six times seven ", "is forty-two."]
ANSWER = ["The answer ", "is 42."]


@pytest.fixture
def thinking_proxy(transactional_db, workspace, settings):
    """The proxy with no Ollama; `claude` (Anthropic) and `reasoner` (OpenAI-compatible) registry models
    on a local wire server. Yields (proxy URL, server)."""
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    server = WireServer().start()
    model_create(workspace=workspace, name="claude", provider="anthropic", model="claude-test", base_url=server.url, api_key=KEY)
    model_create(workspace=workspace, name="reasoner", provider="openai-compatible", model="deepseek-r1", base_url=f"{server.url}/v1")
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        yield url, server
    server.stop()
    cache.forget(workspace.pk)


def anthropic_events(thought=THOUGHT):
    """A streamed answer: a thinking block (its deltas, then its signature), then a text block."""
    start = {"type": "message_start", "message": {**message([]), "stop_reason": None,
                                                  "usage": {"input_tokens": 11, "output_tokens": 1}}}

    def block(index, kind, deltas, field):
        empty = {"type": kind, kind: "", **({"signature": ""} if kind == "thinking" else {})}
        events = [("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty})]
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": field, kind: d}}) for d in deltas]
        if kind == "thinking":
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}}))
        return [*events, ("content_block_stop", {"type": "content_block_stop", "index": index})]

    thinking = block(0, "thinking", thought, "thinking_delta") if thought else []
    return ([("message_start", start), *thinking] + block(len(thinking) and 1, "text", ANSWER, "text_delta")
            + [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": 9}}),
               ("message_stop", {"type": "message_stop"})])


def reasoning_events():
    """A streamed OpenAI-compatible answer whose deltas carry `reasoning_content` before the content."""
    return ([chunk({"role": "assistant", "reasoning_content": THOUGHT[0]}), chunk({"reasoning_content": THOUGHT[1]})]
            + [chunk({"content": piece}) for piece in ANSWER]
            + [chunk({}, finish="stop"), chunk(None, usage=(11, 9)), (None, "[DONE]")])


# --- Anthropic's extended thinking through Ollama's API ------------------------------------------------------

def test_an_anthropic_models_thinking_streams_before_its_answer_through_ollamas_chat(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(anthropic_events())
    parts = list(ollama.Client(host=url).chat(model="claude", messages=QUESTION, think=True, stream=True))

    assert [part.message.thinking or "" for part in parts[:2]] == THOUGHT  # thinking first, as it came
    assert all(not part.message.content for part in parts[:2])
    assert [part.message.content for part in parts[2:4]] == ANSWER and not any(p.message.thinking for p in parts[2:])
    assert parts[-1].done and parts[-1].done_reason == "stop" and parts[-1].eval_count == 9
    sent = server.bodies[0]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 4096}  # true is medium
    assert sent["max_tokens"] > 4096 and sent["stream"] is True


def test_an_anthropic_models_thinking_whole_through_ollamas_chat_at_the_level_asked(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(anthropic_events())
    answer = ollama.Client(host=url).chat(model="claude", messages=QUESTION, think="high", stream=False,
                                          options={"temperature": 0.3})

    assert answer.message.thinking == "".join(THOUGHT)
    assert answer.message.content == "".join(ANSWER)  # the thinking is never in the content
    sent = server.bodies[0]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert "temperature" not in sent  # Anthropic refuses a temperature while thinking


def test_an_anthropic_models_thinking_through_ollamas_generate_streamed_and_whole(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(anthropic_events()).respond_stream(anthropic_events())
    client = ollama.Client(host=url)

    parts = list(client.generate(model="claude", prompt="Six times seven?", think="low", stream=True))
    assert "".join(part.thinking or "" for part in parts) == "".join(THOUGHT)
    assert "".join(part.response for part in parts) == "".join(ANSWER)
    first_answer = next(i for i, part in enumerate(parts) if part.response)
    assert all(not part.thinking for part in parts[first_answer:])  # thinking before the answer

    whole = client.generate(model="claude", prompt="Six times seven?", think=True, stream=False)
    assert whole.thinking == "".join(THOUGHT) and whole.response == "".join(ANSWER)
    assert [body["thinking"]["budget_tokens"] for body in server.bodies] == [1024, 4096]


def test_without_think_no_thinking_is_asked_for(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(anthropic_events(thought=()))
    answer = ollama.Client(host=url).chat(model="claude", messages=QUESTION, stream=False, think=False)
    assert answer.message.content == "".join(ANSWER) and not answer.message.thinking
    assert "thinking" not in server.bodies[0]


def test_an_anthropic_models_thinking_through_openais_chat_completions(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(anthropic_events()).respond_stream(anthropic_events())
    client = openai_client(url)

    streamed = list(client.chat.completions.create(model="claude", messages=QUESTION, stream=True,
                                                   reasoning_effort="high"))
    reasoning_at = [i for i, c in enumerate(streamed) if c.choices and getattr(c.choices[0].delta, "reasoning", None)]
    content_at = [i for i, c in enumerate(streamed) if c.choices and c.choices[0].delta.content]
    assert max(reasoning_at) < min(content_at)
    choice = streamed_choices(streamed)[0]
    assert choice["reasoning_content"] == choice["reasoning"] == "".join(THOUGHT)
    assert choice["content"] == "".join(ANSWER) and choice["finish_reason"] == "stop"

    whole = client.chat.completions.create(model="claude", messages=QUESTION, reasoning_effort="low")
    extra = whole.choices[0].message.model_extra
    assert extra["reasoning_content"] == extra["reasoning"] == "".join(THOUGHT)
    assert whole.choices[0].message.content == "".join(ANSWER)
    assert [body["thinking"]["budget_tokens"] for body in server.bodies] == [16384, 1024]


# --- an OpenAI-compatible server's reasoning_content ---------------------------------------------------------

def test_an_openai_compatible_models_reasoning_through_ollamas_chat_streamed_and_whole(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(reasoning_events()).respond_stream(reasoning_events())
    client = ollama.Client(host=url)

    parts = list(client.chat(model="reasoner", messages=QUESTION, think="low", stream=True))
    assert [part.message.thinking or "" for part in parts[:2]] == THOUGHT
    assert "".join(part.message.content for part in parts) == "".join(ANSWER)

    whole = client.chat(model="reasoner", messages=QUESTION, think=True, stream=False)
    assert whole.message.thinking == "".join(THOUGHT) and whole.message.content == "".join(ANSWER)
    assert [body.get("reasoning_effort") for body in server.bodies] == ["low", "medium"]


def test_an_openai_compatible_models_reasoning_through_openais_chat_completions(thinking_proxy):
    url, server = thinking_proxy
    server.respond_stream(reasoning_events()).respond_stream(reasoning_events())
    client = openai_client(url)

    choice = streamed_choices(client.chat.completions.create(model="reasoner", messages=QUESTION, stream=True,
                                                             reasoning_effort="medium"))[0]
    assert choice["reasoning_content"] == choice["reasoning"] == "".join(THOUGHT)
    assert choice["content"] == "".join(ANSWER)

    whole = client.chat.completions.create(model="reasoner", messages=QUESTION, reasoning_effort="high")
    assert whole.choices[0].message.model_extra["reasoning_content"] == "".join(THOUGHT)
    assert whole.choices[0].message.content == "".join(ANSWER)
    assert [body["reasoning_effort"] for body in server.bodies] == ["medium", "high"]


# --- a model that cannot think, and bad values ------------------------------------------------------------------

def test_a_model_that_cannot_think_asked_to_is_ollamas_400(thinking_proxy):
    url, server = thinking_proxy
    client = ollama.Client(host=url)
    for call in (lambda: client.chat(model="offline", messages=QUESTION, think=True),
                 lambda: client.generate(model="offline", prompt="Six times seven?", think="high", stream=False)):
        with pytest.raises(ollama.ResponseError) as refused:
            call()
        assert refused.value.status_code == 400 and refused.value.error == '"offline" does not support thinking'
    assert client.chat(model="offline", messages=QUESTION, think=False, stream=False).message.content

    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(url).chat.completions.create(model="offline", messages=QUESTION, reasoning_effort="low")
    assert refused.value.body["message"] == '"offline" does not support thinking'
    assert server.requests == []


def test_a_request_refused_for_thinking_teaches_the_world_nothing(thinking_proxy, workspace):
    url, _server = thinking_proxy
    world = cache.world(workspace.pk)
    before = world.counted["gnommoweb"]
    with pytest.raises(openai.BadRequestError):  # two choices: the proxy itself runs the middleware
        openai_client(url).chat.completions.create(model="offline", n=2, reasoning_effort="low", messages=[
            {"role": "user", "content": "Please update gnommoweb"}])
    assert world.counted["gnommoweb"] == before


@pytest.mark.parametrize("think, error", [
    ("deep", 'invalid think value: "deep" (must be "high", "medium", "low", true, or false)'),
    (3, 'think must be a boolean or string ("high", "medium", "low", true, or false)'),
])
def test_a_bad_think_value_is_ollamas_400(thinking_proxy, think, error):
    url, server = thinking_proxy
    answer = httpx.post(f"{url}/api/chat", json={"model": "claude", "messages": QUESTION, "think": think})
    assert answer.status_code == 400 and answer.json() == {"error": error}
    assert server.requests == []


def test_show_says_which_registry_models_can_think(thinking_proxy):
    client = ollama.Client(host=thinking_proxy[0])
    assert "thinking" in client.show("claude").capabilities
    assert "thinking" not in client.show("offline").capabilities


# --- the scripted model, the loop guard, the completion's record ------------------------------------------------

def test_a_scripted_models_thinking_loop_cuts_the_stream(transactional_db, workspace, settings, celery_worker):
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    script = Script.install(workspace, roles=("proxy",))
    thought = "Wait, maybe the file is in the attic. "
    script.reply("Found it.", thinking=thought * 30)
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        parts = list(ollama.Client(host=url, headers={"X-Festinger-Session": "scripted-ponderer"}).chat(
            model=f"scripted-{script.name}", messages=QUESTION, stream=True, think=True))
        assert parts[-1].done_reason == "loop"
        assert "".join(part.message.thinking or "" for part in parts).count(thought.strip()) == 4
        assert "".join(part.message.content for part in parts) == ""
        assert script.sent[0].options["think"] == "medium"
        wait_for(lambda: kinds(workspace, "scripted-ponderer") == [LoopEvent.Kind.STREAM_REPETITION])
    script.reset()
    cache.forget(workspace.pk)


def test_each_of_n_choices_thinks(transactional_db, workspace, settings):
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    script = Script.install(workspace, roles=("proxy",))
    script.reply("42.", thinking="Six sevens.").reply("Forty-two.", thinking="Seven sixes.")
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        whole = openai_client(url).chat.completions.create(model=f"scripted-{script.name}", messages=QUESTION, n=2,
                                                            reasoning_effort="low")
    assert sorted((c.message.model_extra["reasoning_content"], c.message.content) for c in whole.choices) == [
        ("Seven sixes.", "Forty-two."), ("Six sevens.", "42.")]
    assert [sent.options["think"] for sent in script.sent] == ["low", "low"]
    script.reset()
    cache.forget(workspace.pk)


def test_a_completions_thinking_survives_its_dict():
    completion = Completion(text="42.", thinking="Six times seven.")
    assert Completion.from_dict(completion.to_dict()).thinking == "Six times seven."
    assert Completion.from_dict({"text": "42."}).thinking == ""
