"""OpenAI's chat completions through the proxy with the official `openai` client: `n` choices (one
upstream call each, around one pass of the middleware) and a reasoning model's thinking as
`reasoning_content` / `reasoning`, streamed and not, from a fake Ollama and from registry models;
bad `n` and reasoning values in OpenAI's error shape."""

import json

import httpx
import openai
import pytest

from fathom.llm.scripted import Script
from festinger import cache
from festinger.loops.guard import loop_config_update
from festinger.loops.models import LoopEvent
from festinger.proxy.serve import own_port_app
from festinger.services import insert_fact, world_ensure
from tests.conftest import wait_for
from tests.festinger.proxy_support import serving
from tests.festinger.test_loops import STUCK, finished_calls, kinds

HI = [{"role": "user", "content": "hi"}]
Kind = LoopEvent.Kind


def openai_client(url):
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def registry_proxy(transactional_db, workspace, settings):
    """The proxy with no Ollama, and a scripted registry model (`scripted-<name>`) answering it."""
    settings.OLLAMA_HOST = ""
    world_ensure(workspace=workspace)
    script = Script.install(workspace, roles=("proxy",))
    with serving(own_port_app(workspace_slug=workspace.slug, token="")) as url:
        yield url, script
    script.reset()
    cache.forget(workspace.pk)


def streamed_choices(chunks) -> dict[int, dict]:
    """index -> {"content", "reasoning_content", "reasoning", "finish_reason", "roles"} of a stream."""
    choices: dict[int, dict] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            seen = choices.setdefault(choice.index, {"content": "", "reasoning_content": "", "reasoning": "",
                                                     "finish_reason": None, "roles": []})
            delta = choice.delta
            seen["content"] += delta.content or ""
            seen["reasoning_content"] += getattr(delta, "reasoning_content", None) or ""
            seen["reasoning"] += getattr(delta, "reasoning", None) or ""
            if delta.role:
                seen["roles"].append(delta.role)
            if choice.finish_reason:
                seen["finish_reason"] = choice.finish_reason
    return choices


# --- n choices ---------------------------------------------------------------------------------------------

def test_n_choices_from_ollama_are_n_upstream_calls_whole_and_streamed(proxy, fake_ollama):
    fake_ollama.reply_chat("alpha").reply_chat("beta")
    client = openai_client(proxy)

    whole = client.chat.completions.create(model="llama3.2", n=2, messages=HI)

    assert [choice.index for choice in whole.choices] == [0, 1]
    assert {choice.message.content for choice in whole.choices} == {"alpha", "beta"}
    assert {choice.finish_reason for choice in whole.choices} == {"stop"}
    assert whole.usage.prompt_tokens == 11 and whole.usage.completion_tokens == 14  # the prompt once, both answers
    first, second = fake_ollama.chat_bodies()
    assert first["messages"] == second["messages"] and first["stream"] is False

    fake_ollama.reply_chat("gamma ray", chunks=3).reply_chat("delta wing", chunks=3)
    chunks = list(client.chat.completions.create(model="llama3.2", n=2, stream=True, messages=HI,
                                                 stream_options={"include_usage": True}))
    choices = streamed_choices(chunks)
    assert {choices[0]["content"], choices[1]["content"]} == {"gamma ray", "delta wing"}
    assert choices[0]["roles"] == choices[1]["roles"] == ["assistant"]
    assert choices[0]["finish_reason"] == choices[1]["finish_reason"] == "stop"
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 14


def test_a_client_that_leaves_mid_stream_cancels_every_choices_upstream_request(proxy, fake_ollama):
    fake_ollama.endless("and again ").endless("once more ")
    with httpx.stream("POST", f"{proxy}/v1/chat/completions", json={
            "model": "llama3.2", "n": 2, "stream": True,
            "messages": [{"role": "user", "content": "Count forever, varying the words"}]}) as answer:
        streaming = set()
        for line in answer.iter_lines():  # until both choices stream
            if line.startswith("data: "):
                streaming |= {choice["index"] for choice in json.loads(line[6:])["choices"]}
            if streaming == {0, 1}:
                break
    wait_for(lambda: fake_ollama.streams_closed == 2)


def test_seeded_choices_differ_by_their_seed(proxy, fake_ollama):
    fake_ollama.always_chat("same")
    openai_client(proxy).chat.completions.create(model="llama3.2", n=3, seed=7, temperature=0.5, messages=HI)
    options = [body["options"] for body in fake_ollama.chat_bodies()]
    assert sorted(option["seed"] for option in options) == [7, 8, 9]
    assert {option["temperature"] for option in options} == {0.5}


def test_one_turn_with_n_choices_is_one_turn_for_the_loop_guard(proxy, fake_ollama, workspace, celery_worker):
    loop_config_update(workspace=workspace, repeat_count=2, breaker_after=1)
    fake_ollama.always_chat(STUCK)
    client = openai.OpenAI(base_url=f"{proxy}/v1", api_key="unused", max_retries=0,
                           default_headers={"X-Festinger-Session": "sampler"})
    messages = [{"role": "user", "content": "Find the report."}]

    answer = client.chat.completions.create(model="llama3.2", n=2, messages=messages)
    wait_for(lambda: finished_calls(workspace) == 1)
    assert [choice.message.content for choice in answer.choices] == [STUCK, STUCK]
    assert kinds(workspace, "sampler") == []  # two alike choices of one turn are no repetition

    client.chat.completions.create(model="llama3.2", n=2, messages=messages)  # the same answer, a turn later
    wait_for(lambda: Kind.REPEATED_OUTPUT in kinds(workspace, "sampler"))
    wait_for(lambda: finished_calls(workspace) == 2)  # traced as complete after its loop events are recorded
    calls_before = len(fake_ollama.chat_bodies())
    stopped = client.chat.completions.create(model="llama3.2", n=2, messages=messages)
    assert len(stopped.choices) == 2
    assert all("loop detector stopped" in choice.message.content for choice in stopped.choices)
    assert len(fake_ollama.chat_bodies()) == calls_before  # the breaker answered without the upstream


def test_n_choices_from_a_registry_model_share_one_recollection(registry_proxy, workspace):
    url, script = registry_proxy
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    world = cache.world(workspace.pk)
    for _ in range(3):
        world.count("gnommoweb gnommoweb")
    script.reply("first answer").reply("second answer")
    client = openai_client(url)
    messages = [{"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "Please update gnommoweb to use FastAPI instead"}]

    whole = client.chat.completions.create(model=f"scripted-{script.name}", n=2, messages=messages)

    assert {choice.message.content for choice in whole.choices} == {"first answer", "second answer"}
    assert len(script.sent) == 2
    for sent in script.sent:
        assert sent.messages[0].content.count("<recollection>") == 1
        assert "gnommoweb: [type] repo" in sent.messages[0].content
        assert sent.messages[-1].content == messages[-1]["content"]

    script.reply("streamed one").reply("streamed two")
    choices = streamed_choices(client.chat.completions.create(model=f"scripted-{script.name}", n=2, stream=True,
                                                              messages=HI))
    assert {choices[0]["content"], choices[1]["content"]} == {"streamed one", "streamed two"}


def test_n_choices_of_a_registry_model_are_one_turn_for_the_loop_guard(registry_proxy, workspace, celery_worker):
    url, script = registry_proxy
    loop_config_update(workspace=workspace, repeat_count=2)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                           default_headers={"X-Festinger-Session": "registry-sampler"})
    messages = [{"role": "user", "content": "Find the report."}]

    script.reply(STUCK).reply(STUCK)
    client.chat.completions.create(model=f"scripted-{script.name}", n=2, messages=messages)
    wait_for(lambda: finished_calls(workspace) == 1)
    assert kinds(workspace, "registry-sampler") == []

    script.reply(STUCK).reply(STUCK)
    client.chat.completions.create(model=f"scripted-{script.name}", n=2, messages=messages)
    wait_for(lambda: finished_calls(workspace) == 2)  # traced as complete after its loop events are recorded
    assert Kind.REPEATED_OUTPUT in kinds(workspace, "registry-sampler")


def test_n_choices_from_the_offline_model(proxy):
    answer = openai_client(proxy).chat.completions.create(model="offline", n=2, messages=HI)
    assert len(answer.choices) == 2 and answer.choices[0].message.content == answer.choices[1].message.content


def test_a_choice_that_fails_fails_the_answer_in_openais_shape(proxy, fake_ollama):
    fake_ollama.always_chat("fine")
    fake_ollama.reply(lambda handler, body: handler._json(500, {"error": "the runner crashed"}))
    with pytest.raises(openai.InternalServerError) as raised:
        openai_client(proxy).chat.completions.create(model="llama3.2", n=2, messages=HI)
    assert raised.value.body["message"] == "the runner crashed" and raised.value.body["type"] == "api_error"


@pytest.mark.parametrize(("n", "code"), [
    (0, "integer_below_min_value"),
    (-1, "integer_below_min_value"),
    (9, "integer_above_max_value"),
    ("2", "invalid_type"),
    (1.5, "invalid_type"),
    (True, "invalid_type"),
])
def test_a_bad_n_is_openais_400_before_any_upstream_call(proxy, fake_ollama, n, code):
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client(proxy).chat.completions.create(model="llama3.2", n=n, messages=HI)
    assert raised.value.param == "n" and raised.value.code == code and "'n'" in raised.value.message
    assert fake_ollama.chat_bodies() == []


def test_an_unknown_model_with_n_choices_is_openais_404(proxy):
    with pytest.raises(openai.NotFoundError) as raised:
        openai_client(proxy).chat.completions.create(model="nope", n=2, messages=HI)
    assert raised.value.code == "model_not_found" and 'model "nope" not found' in raised.value.message


# --- reasoning ---------------------------------------------------------------------------------------------

def test_ollamas_thinking_is_reasoning_content_whole_and_streamed(proxy, fake_ollama):
    fake_ollama.reply_chat("42.", thinking="Six times seven.").reply_chat("The answer is 42.", chunks=3,
                                                                          thinking="Six times seven.")
    client = openai_client(proxy)

    whole = client.chat.completions.create(model="qwen3:8b", messages=HI)
    message = whole.choices[0].message
    assert message.content == "42."
    assert message.reasoning_content == "Six times seven." and message.reasoning == "Six times seven."

    chunks = list(client.chat.completions.create(model="qwen3:8b", stream=True, messages=HI))
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    # the first object carried thinking and content: two chunks, the thinking first, with the role
    assert deltas[0].role == "assistant" and deltas[0].reasoning_content == "Six times seven."
    assert deltas[0].content is None and getattr(deltas[1], "reasoning_content", None) is None
    choice = streamed_choices(chunks)[0]
    assert choice["content"] == "The answer is 42." and choice["reasoning"] == "Six times seven."


def test_reasoning_goes_upstream_as_thinking_and_reasoning_effort_as_think(proxy, fake_ollama):
    fake_ollama.reply_chat("ok").reply_chat("ok").reply_chat("ok")
    client = openai_client(proxy)
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "hello", "reasoning_content": "Greet back."},
               {"role": "assistant", "content": "again", "reasoning": "Once more."},
               {"role": "user", "content": "and?"}]
    client.chat.completions.create(model="qwen3:8b", messages=history, reasoning_effort="high")
    client.chat.completions.create(model="qwen3:8b", messages=HI, reasoning_effort="minimal")
    client.chat.completions.create(model="qwen3:8b", messages=HI, extra_body={"reasoning_effort": "none"})
    first, second, third = fake_ollama.chat_bodies()
    assert [m.get("thinking") for m in first["messages"]] == [None, "Greet back.", "Once more.", None]
    assert first["think"] == "high" and second["think"] == "low" and third["think"] is False


def test_a_bad_reasoning_effort_is_openais_400(proxy, fake_ollama):
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client(proxy).chat.completions.create(model="qwen3:8b", messages=HI,
                                                     extra_body={"reasoning_effort": "extreme"})
    assert raised.value.param == "reasoning_effort" and "invalid reasoning value" in raised.value.message
    bad = httpx.post(f"{proxy}/v1/chat/completions",
                     json={"model": "qwen3:8b", "messages": HI, "reasoning": {"effort": ["high"]}})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert fake_ollama.chat_bodies() == []


def test_a_streamed_tool_call_finishes_with_tool_calls(proxy, fake_ollama):
    fake_ollama.reply_chat("", tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}])
    chunks = list(openai_client(proxy).chat.completions.create(model="llama3.2", stream=True, messages=HI))
    calls = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or ()]
    assert [call.function.name for call in calls] == ["get_weather"]
    assert streamed_choices(chunks)[0]["finish_reason"] == "tool_calls"
