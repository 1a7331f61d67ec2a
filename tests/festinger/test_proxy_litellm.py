"""LiteLLM's `ollama_chat` client (the path Agent Zero takes to Ollama) against the proxy, in front of
a fake Ollama: whole and streamed answers, tools, and a recollection in the forwarded prompt."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of LiteLLM's price list

import litellm  # noqa: E402

from festinger import cache  # noqa: E402
from festinger.services import insert_fact  # noqa: E402


def test_litellm_ollama_chat_whole_and_streamed(proxy, fake_ollama):
    fake_ollama.reply_chat("Hello from the proxy", chunks=3).reply_chat("Streamed through", chunks=4)
    whole = litellm.completion(model="ollama_chat/llama3.2", api_base=proxy,
                               messages=[{"role": "user", "content": "hi"}])
    assert whole.choices[0].message.content == "Hello from the proxy"
    assert whole.usage.prompt_tokens == 11 and whole.usage.completion_tokens == 7
    chunks = list(litellm.completion(model="ollama_chat/llama3.2", api_base=proxy, stream=True,
                                     messages=[{"role": "user", "content": "hi"}]))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Streamed through"


def test_litellm_ollama_chat_tools(proxy, fake_ollama):
    fake_ollama.reply_chat("", tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}])
    answer = litellm.completion(
        model="ollama_chat/llama3.2", api_base=proxy, messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}])
    call = answer.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and '"Oslo"' in call.function.arguments
    assert fake_ollama.chat_bodies()[0]["tools"][0]["function"]["name"] == "get_weather"


def test_litellm_sees_the_recollection_forwarded(proxy, fake_ollama, workspace):
    insert_fact(workspace=workspace, concept="gnommoweb", parent="repo", dimension="type", is_isa=True,
                confidence=0.9, source="gutask")
    cache.world(workspace.pk).count("gnommoweb gnommoweb")
    fake_ollama.reply_chat("Noted.")
    litellm.completion(model="ollama_chat/llama3.2", api_base=proxy, messages=[
        {"role": "system", "content": "You are Agent Zero."}, {"role": "user", "content": "Deploy gnommoweb now"}])
    system = fake_ollama.chat_bodies()[0]["messages"][0]["content"]
    assert system.startswith("<recollection>\ngnommoweb: [type] repo") and system.endswith("You are Agent Zero.")
