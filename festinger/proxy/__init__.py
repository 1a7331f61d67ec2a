"""Festinger's proxy (seed 002, T01): Ollama's API and OpenAI's chat completions in front of a real
Ollama (OLLAMA_HOST) or any registry model, for one workspace per port.

- `app`: the ASGI app (plain ASGI, no framework: this is the hot path) and its routes;
- `admission`: who may use a door (the Host header, a browser's Origin), checked first;
- `request`: one HTTP exchange (the body, bounded as the API's, the response, a client that leaves);
- `wire`: Ollama's and OpenAI's wire shapes (requests parsed and validated, NDJSON / SSE / JSON out, errors);
- `ollama_writer`, `openai_writer`: an answer written as Ollama's NDJSON or OpenAI's server-sent events;
- `relay`: an Ollama upstream's or a registry model's answer relayed as it comes, watched for a loop;
- `threads`: the work done in threads (the database, the model middleware, a registry model's call);
- `upstreams`: which upstream answers a model name (the admin's table, the registry, Ollama);
- `calls`: one proxied call through the model middleware (recollections in, loop guard), with the
  write path handed off after the response;
- `serve`, `asgi`: `fathom up`'s proxy process (FATHOM_PROXY_PORT), and the mount under the main port."""
