"""Festinger's proxy (seed 002, T01): Ollama's API and OpenAI's chat completions in front of a real
Ollama (OLLAMA_HOST) or any registry model, for one workspace per port.

- `app`: the ASGI app (plain ASGI, no framework: this is the hot path) and its routes;
- `wire`: Ollama's and OpenAI's wire shapes (requests in, NDJSON / SSE / JSON out, errors);
- `upstreams`: which upstream answers a model name (the admin's table, the registry, Ollama);
- `conversation`: the model middleware around a proxied call (recollections in, loop guard), with the
  write path handed off after the response;
- `asgi`: `fathom up`'s proxy process (FATHOM_PROXY_PORT), and the mount under the main port."""
