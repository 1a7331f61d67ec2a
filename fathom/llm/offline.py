"""The offline model: no network, no randomness, the same answer for the same request. It keeps the
product usable with no key and says plainly that it is offline.

- A plain request gets a short text that says no language model is configured and echoes the
  question.
- A request with a JSON-schema `response_format` gets the simplest instance of the schema (first enum
  value, defaults where given, "" / 0 / false / [] otherwise).
- A tool-calling request follows the caller's policy, passed as the `offline_policy` option: an
  object with `next_step(request) -> ToolCall | str` (a tool to call next, or the final text). For
  fires, `SearchThenRespond("search", question=...)`: search the lake with the question (never a
  note the caller added to the conversation), then answer with what was found, citing the ids, with
  the cards the system prompt asks for. A policy with `without_tools = True` answers requests without
  tools too (the quality harness's roles: harness.quality.agents.OfflineQuality).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

from django.conf import settings
from django.utils.module_loading import import_string

from fathom.llm.errors import LLMError
from fathom.llm.types import Completion, Embeddings, StopReason, StreamChunk, ToolCall, Usage

OFFLINE_NOTICE = "[offline]"
_ID_PATTERN = re.compile(r"\b[0-9a-f]{6,32}\b")
# "read fs://notes/todo.md": a verb, then a path with a scheme (trailing punctuation is not the path's).
# A card the system prompt asks for: `"kind": "insight"` (the fire's quality requirements write them so).
_CARD_REQUEST = re.compile(r'"kind": "([a-z]+)"')
QUOTE_WORDS = 12  # an insight card quotes the first words of its source
_PATH_REQUEST = re.compile(r"\b([A-Za-z]+)\s+([a-z][a-z0-9+.-]*://[^\s,;\"'<>()]*[^\s,;\"'<>().!?:])", re.IGNORECASE)


class OfflineProvider:
    name = "offline"

    def complete(self, request, *, timeout: float | None = None) -> Completion:
        policy = request.options.get("offline_policy")
        if policy is not None and (request.tools or getattr(policy, "without_tools", False)):
            step = policy.next_step(request)
            if isinstance(step, ToolCall):
                return self._completion(request, "", (step,), StopReason.TOOL_CALLS)
            if isinstance(step, Completion):
                return step
            return self._completion(request, str(step), (), StopReason.END)
        schema = json_schema_of(request.response_format)
        if schema is not None:
            return self._completion(request, json.dumps(instance_of(schema), sort_keys=True), (), StopReason.END)
        if request.response_format and request.response_format.get("type") == "json_object":
            return self._completion(request, json.dumps({"offline": True}), (), StopReason.END)
        return self._completion(request, plain_answer(request), (), StopReason.END)

    def stream(self, request, *, timeout: float | None = None) -> Iterator[StreamChunk]:
        completion = self.complete(request, timeout=timeout)
        for piece in re.findall(r"\S+\s*", completion.text):
            yield StreamChunk(text=piece)
        for call in completion.tool_calls:
            yield StreamChunk(tool_call=call)
        yield StreamChunk(completion=completion)

    def embed(self, request, texts: list[str], *, timeout: float | None = None) -> Embeddings:
        """The project's configured embedder (settings.FATHOM_EMBEDDER_LOADER: the lake's), which is what
        the offline model embeds with."""
        embedder = import_string(settings.FATHOM_EMBEDDER_LOADER)()
        try:
            vectors = embedder.embed(list(texts))
        except Exception as exc:  # noqa: BLE001 - the embedder's errors are its own app's types, unknown here
            raise LLMError(f"the embedder {embedder.name} failed: {exc}", provider=self.name,
                           model=embedder.name) from exc
        return Embeddings(vectors, Usage(input_tokens=sum(approx_tokens(len(text)) for text in texts)),
                          model=embedder.name, provider=self.name)

    def _completion(self, request, text, tool_calls, stop_reason) -> Completion:
        prompt_chars = sum(len(m.content) for m in request.messages)
        output_chars = len(text) + sum(len(json.dumps(c.arguments)) for c in tool_calls)
        return Completion(
            text=text, tool_calls=tuple(tool_calls), stop_reason=stop_reason,
            usage=Usage(input_tokens=approx_tokens(prompt_chars), output_tokens=approx_tokens(output_chars)),
            model="offline", provider="offline", request_id=f"offline-{request_digest(request)}",
        )


class SearchThenRespond:
    """The fire policy: call `search_tool` once with the question (`question`, or else the last user
    message) as `query_argument`, then answer from the results, citing every id found in them. With
    `respond_tool` set, the answer is a call to that tool with `{text_argument: ..., citations_argument:
    [...]}` instead of plain text; with `cards_argument` set too, it carries the cards the system prompt
    asks for by kind (`"kind": "<kind>"`): an insight per item found, quoting its first words, and one
    card of any other kind, built from what was found.

    Two more habits, when the caller asks for them:
    - `path_tools` ({verb: tool}, e.g. {"list": "fs_list", "read": "fs_read"}): a message that says
      "<verb> <scheme>://<path>" (e.g. "list fs://notes and read fs://notes/todo.md") gets those
      tools called, one per turn in the order written, with `{"path": ...}`; then the answer reports
      their results instead of searching.
    - `relay_prefixes`: a last message that starts with one of them (e.g. "[TaskDone]", a background
      task's result) is answered by relaying it, without a search."""

    def __init__(self, search_tool: str = "search", *, query_argument: str = "query",
                 respond_tool: str | None = None, text_argument: str = "text",
                 citations_argument: str = "citations", extra_arguments: dict | None = None,
                 path_tools: dict[str, str] | None = None, relay_prefixes: tuple[str, ...] = (),
                 question: str = "", cards_argument: str | None = None):
        self.search_tool = search_tool
        self.question = question
        self.cards_argument = cards_argument
        self.query_argument = query_argument
        self.respond_tool = respond_tool
        self.text_argument = text_argument
        self.citations_argument = citations_argument
        self.extra_arguments = extra_arguments or {}
        self.path_tools = path_tools or {}
        self.relay_prefixes = relay_prefixes

    def next_step(self, request):
        tool_names = {tool.name for tool in request.tools or ()}
        last = request.last_user_text.strip()
        query = " ".join(self.question.split()) or last
        if self.relay_prefixes and last.startswith(self.relay_prefixes):
            return self._answer(request, "\n\n".join([f"{OFFLINE_NOTICE} Answering without a language model: "
                                                       "this came back.", *self._relayed(request)]), [], tool_names)
        asked = [(self.path_tools[verb.lower()], path) for verb, path in _PATH_REQUEST.findall(query)
                 if self.path_tools.get(verb.lower()) in tool_names]
        if asked:
            called = {(call.name, call.arguments.get("path")): call.id for m in request.messages
                      if m.role == "assistant" for call in m.tool_calls}
            for name, path in asked:
                if (name, path) not in called:
                    return ToolCall(id=f"offline-{request_digest(request)[:12]}", name=name, arguments={"path": path})
            results = {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}
            lines = [f"- {name} {path}: {results.get(called[name, path], '')}" for name, path in asked]
            return self._answer(request, "\n".join([f"{OFFLINE_NOTICE} Answering without a language model: "
                                                     "I called the file tools you named.", *lines]), [], tool_names)
        return self._search_then_respond(request, tool_names, query)

    def _relayed(self, request) -> list[str]:
        """The trailing user messages that start with a relay prefix, oldest first."""
        relayed = []
        for message in reversed(request.messages):
            if message.role != "user" or not message.content.strip().startswith(self.relay_prefixes):
                break
            relayed.append(message.content.strip())
        return relayed[::-1]

    def _answer(self, request, text: str, cited: list, tool_names: set):
        if self.respond_tool and self.respond_tool in tool_names:
            return ToolCall(id=f"offline-{request_digest(request)[:12]}", name=self.respond_tool,
                            arguments={self.text_argument: text, self.citations_argument: cited})
        return text

    def _search_then_respond(self, request, tool_names: set, query: str):
        searched = [call for m in request.messages if m.role == "assistant" for call in m.tool_calls
                    if call.name == self.search_tool]
        if not searched and self.search_tool in tool_names:
            return ToolCall(id=f"offline-{request_digest(request)[:12]}", name=self.search_tool,
                            arguments={self.query_argument: query, **self.extra_arguments})
        call_ids = {call.id for call in searched}
        results = [m.content for m in request.messages if m.role == "tool" and m.tool_call_id in call_ids]
        found = cited_items(results)
        text = offline_summary(query, found)
        if self.respond_tool and self.respond_tool in tool_names:
            arguments = {self.text_argument: text, self.citations_argument: [i for i, _ in found]}
            if self.cards_argument:
                asked = [kind for message in request.messages if message.role == "system"
                         for kind in _CARD_REQUEST.findall(message.content)]
                cards = offline_cards(query, found, kinds=list(dict.fromkeys(asked)))
                if cards:
                    arguments[self.cards_argument] = cards
            return ToolCall(id=f"offline-{request_digest(request)[:12]}", name=self.respond_tool, arguments=arguments)
        return text


def plain_answer(request) -> str:
    question = " ".join(request.last_user_text.split())
    if len(question) > 200:
        question = question[:199] + "…"
    images = sum(len(m.images) for m in request.messages)
    seen = f" ({images} image(s) not viewed)" if images else ""
    return (f"{OFFLINE_NOTICE} No language model is configured for the role '{request.role}' in this "
            f"workspace, so the offline model answers: it cannot reason about your message{seen}. "
            f"You asked: \"{question}\". Configure a model in the admin (LLM models) to get real answers.")


def offline_summary(query: str, found: list[tuple[str, str]]) -> str:
    configure = "Configure a model in the admin (LLM models) to get answers that weigh what was found."
    if not found:
        return (f"{OFFLINE_NOTICE} I searched for \"{query}\" without a language model and found nothing. "
                f"{configure}")
    lines = [f"{OFFLINE_NOTICE} Answering without a language model: I searched for \"{query}\" and "
             f"found {len(found)} item(s):"]
    lines += [f"- [{item_id}] {snippet}" if snippet else f"- [{item_id}]" for item_id, snippet in found]
    return "\n".join([*lines, configure])


def offline_cards(query: str, found: list[tuple[str, str]], *, kinds: list[str]) -> list[dict]:
    """The cards asked for by kind: an insight per item found (quoting its first words), one card of
    any other kind listing what was found; none when nothing was found (nothing to cite)."""
    cards = []
    for kind in kinds if found else []:
        if kind == "insight":
            for item_id, snippet in found:
                quote = " ".join(snippet.split()[:QUOTE_WORDS])
                cards.append({"kind": kind, "title": f"{OFFLINE_NOTICE} from [{item_id}]",
                              "body": f"[{item_id}] holds: \"{quote}\"" if quote else f"[{item_id}]",
                              "citations": [{"id": item_id, **({"quote": quote} if quote else {})}]})
            continue
        lines = [f"{OFFLINE_NOTICE} A {kind} for \"{query}\", put together without a language model from what "
                 "the lake holds; read the items before acting on it:"]
        lines += [f"- [{item_id}] {snippet}" for item_id, snippet in found]
        cards.append({"kind": kind, "title": f"{OFFLINE_NOTICE} {kind}: {query[:80]}", "body": "\n".join(lines),
                      "citations": [{"id": item_id} for item_id, _ in found]})
    return cards


def cited_items(results: list[str], limit: int = 10) -> list[tuple[str, str]]:
    """(id, snippet) for each item in tool results: JSON objects with an "id", else hex ids in text."""
    found: dict[str, str] = {}
    for text in results:
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            data = None
        if data is not None:
            for item in _objects_with_ids(data):
                snippet = item.get("content") or item.get("text") or item.get("summary") or ""
                found.setdefault(str(item["id"]), " ".join(str(snippet).split())[:120])
        else:  # rendered text: the rest of an id's line is its snippet, after its " · "-separated heading
            for line in str(text).splitlines():
                for match in _ID_PATTERN.finditer(line):
                    rest = line[match.end():].lstrip("]) ·:-").rpartition(" · ")[2]
                    found.setdefault(match.group(), " ".join(rest.split())[:120])
    return list(found.items())[:limit]


def _objects_with_ids(data):
    if isinstance(data, dict):
        if "id" in data and isinstance(data["id"], (str, int)):
            yield data
        for value in data.values():
            if isinstance(value, (dict, list)):
                yield from _objects_with_ids(value)
    elif isinstance(data, list):
        for value in data:
            yield from _objects_with_ids(value)


def json_schema_of(response_format: dict | None) -> dict | None:
    if not response_format or response_format.get("type") != "json_schema":
        return None
    inner = response_format.get("json_schema") or {}
    return inner.get("schema") or response_format.get("schema") or {}


def instance_of(schema: dict, depth: int = 0):
    """The simplest value that satisfies a (simple) JSON Schema."""
    if depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return instance_of(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: instance_of(sub, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        minimum = schema.get("minItems", 0)
        return [instance_of(schema.get("items") or {}, depth + 1) for _ in range(minimum)]
    if kind == "string":
        return "offline" if schema.get("minLength", 0) > 0 else ""
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def request_digest(request) -> str:
    payload = json.dumps([m.to_dict() for m in request.messages], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def approx_tokens(chars: int) -> int:
    return (chars + 3) // 4
