"""web_search(query, limit): search the web through the configured backend (FATHOM_WEB_SEARCH_BACKEND).

Backends are pluggable: "none" (the tool says no backend is configured), "searxng" (a SearXNG-style
JSON endpoint at FATHOM_WEB_SEARCH_URL), or the dotted path of a class whose `search(query, limit)`
returns [{title, url, snippet}]."""

from __future__ import annotations

import httpx
from django.conf import settings
from django.utils.module_loading import import_string

from harness.fires.tools.base import Tool, ToolContext, ToolError, register


class NoBackend:
    def search(self, query: str, limit: int) -> list[dict]:
        raise ToolError("no web search backend is configured (FATHOM_WEB_SEARCH_BACKEND / FATHOM_WEB_SEARCH_URL); "
                        "answer from the lake, and say the web was not searched")


class SearxngBackend:
    """GET <url>?q=<query>&format=json -> {"results": [{"title", "url", "content"}, ...]}."""

    def __init__(self, url: str | None = None, timeout: float | None = None):
        self.url = url or settings.FATHOM_WEB_SEARCH_URL
        self.timeout = timeout or settings.FATHOM_WEB_SEARCH_TIMEOUT_SECONDS

    def search(self, query: str, limit: int) -> list[dict]:
        if not self.url:
            raise ToolError("the searxng web search backend needs FATHOM_WEB_SEARCH_URL")
        try:
            response = httpx.get(self.url, params={"q": query, "format": "json"}, timeout=self.timeout)
            response.raise_for_status()
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ToolError(f"the web search backend failed: {type(exc).__name__}: {str(exc)[:300]}") from None
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise ToolError("the web search backend answered without a results list")
        return [{"title": str(r.get("title", "")), "url": str(r.get("url", "")),
                 "snippet": str(r.get("content") or r.get("snippet") or "")}
                for r in results if isinstance(r, dict)][:limit]


BACKENDS = {"none": NoBackend, "searxng": SearxngBackend}


def backend():
    name = settings.FATHOM_WEB_SEARCH_BACKEND
    return (BACKENDS.get(name) or import_string(name))()


def run(ctx: ToolContext, args: dict):
    results = backend().search(args["query"], args.get("limit", 5))
    if not results:
        return f"the web has nothing for {args['query']!r}"
    return "\n".join(f"- {r['title']} <{r['url']}>\n  {' '.join(r['snippet'].split())[:500]}" for r in results)


TOOL = register(Tool(
    name="web_search",
    description="Search the web (news, current events, anything outside the lake). Returns titles, URLs and "
                "snippets; says so when no web search backend is configured.",
    run=run,
    transactional=False,
    parameters={"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 500},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
    }},
))
