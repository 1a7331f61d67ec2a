"""The terminal client (seed 003's TUI demo, over REST and Server-Sent Events instead of gRPC).

It talks to a Fathom over HTTP only (httpx), so it works against a remote one with a URL and an API
key: it creates or updates the agent and user profiles it is given, opens a session (or attaches to
one), follows the session's event stream (resuming with Last-Event-ID when the server closes it),
sends messages (from the command line, then one per line of standard input) and renders every event
as it comes with `rich`, the agent's answer written out as it streams (AgentStream deltas).

    client = FathomClient(url, key)
    session = client.session_open(title="demo", agent="scout")
    follower = EventFollower(client, session["id"], render=Renderer(console).render)
    client.message_send(session["id"], "hello")

Nothing here touches the database or imports the apps' models: only the REST API's JSON."""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from rich.console import Console
from rich.markup import escape

SSE_SECONDS = 300  # the server's longest stream; the follower reconnects after each
RECONNECT_SECONDS = 1.0
PROFILE_FIELDS = {"agent": ("name", "agents_md", "soul_md", "identity_md", "memory"),
                  "user": ("name", "user_md", "memory", "preferences")}


def client_target(*, url: str, key: str, config: Path, port: int) -> tuple[str, str]:
    """The URL and key to use: each from its flag, else its environment variable (both already in
    `url`/`key` when given), else the config file (TOML: `url = "..."`, `key = "..."`), else this
    machine's port and no key. A config file that is not TOML is a ValueError naming it."""
    if url and key:
        return url, key
    stored = {}
    if config.is_file():
        try:
            stored = tomllib.loads(config.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"the client's config file {config} is not TOML: {exc}") from None
    return (url or str(stored.get("url") or "") or f"http://127.0.0.1:{port}",
            key or str(stored.get("key") or ""))


class ClientError(Exception):
    """The server refused a request: its error envelope's message, with the status."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


class FathomClient:
    """The REST calls the terminal client makes, with the key as a Bearer token."""

    def __init__(self, url: str, key: str, *, timeout: float = 30):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout,
                                 headers={"Authorization": f"Bearer {key}"} if key else {})

    def close(self) -> None:
        self.http.close()

    def profile_upsert(self, kind: str, slug: str, fields: dict) -> dict:
        """Update the agent or user profile `slug` with `fields`, creating it if it does not exist."""
        path = f"/v1/profiles/{kind}s"
        response = self.http.patch(f"{path}/{slug}", json=fields)
        if response.status_code == 404:
            response = self.http.post(path, json={"slug": slug, **fields})
        return _json(response)

    def session_open(self, *, session_id: str = "", title: str = "", agent: str = "", user: str = "",
                     tag: str = "") -> dict:
        """Attach to `session_id`, or open a new session with these profiles."""
        if session_id:
            return _json(self.http.get(f"/v1/sessions/{session_id}"))
        return _json(self.http.post("/v1/sessions", json={"title": title, "agent": agent, "user": user, "tag": tag}))

    def message_send(self, session_id: str, content: str) -> dict:
        return _json(self.http.post(f"/v1/sessions/{session_id}/messages", json={"content": content}))

    def profiles_refresh(self, session_id: str) -> dict:
        return _json(self.http.post(f"/v1/sessions/{session_id}/refresh-profile"))

    def events(self, session_id: str, *, after: int, stop: threading.Event) -> Iterable[dict]:
        """The session's events numbered above `after`, as the server sends them, for as long as `stop`
        is not set (reconnecting with Last-Event-ID whenever a stream ends)."""
        while not stop.is_set():
            try:
                with self.http.stream("GET", f"/v1/sessions/{session_id}/events",
                                      params={"timeout": SSE_SECONDS},
                                      headers={"Accept": "text/event-stream", "Last-Event-ID": str(after)},
                                      timeout=httpx.Timeout(30, read=SSE_SECONDS + 30)) as response:
                    if response.status_code != 200:
                        response.read()
                        _json(response)
                    for event in _sse_events(response.iter_lines()):
                        after = event["seq"]
                        yield event
                        if stop.is_set():
                            return
            except httpx.TransportError:
                stop.wait(RECONNECT_SECONDS)


@dataclass
class Progress:
    """What this client is owed, to leave only when all of it came (after standard input ends): a
    turn for each message or refresh it sent, and for what those turns cause in turn. A background
    task a turn of ours starts is owed until its TaskDone trigger arrives, and that trigger's turn is
    owed like a message's (so are the tasks that turn starts, and so on)."""

    sent: set[str] = field(default_factory=set)
    turns: dict[int, set[str]] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)  # started by a turn of ours, their TaskDone not yet queued
    ours: int | None = None  # the turn running now, when it answers something we are owed
    changed: threading.Condition = field(default_factory=threading.Condition)

    def message_sent(self, trigger_id: str) -> None:
        with self.changed:
            self.sent.add(trigger_id)

    def see(self, event: dict) -> None:
        data, kind = event.get("data") or {}, event["kind"]
        with self.changed:
            if kind == "TurnStarted":
                addressed = set(data.get("trigger_ids") or ()) | set(data.get("refired_ids") or ())
                self.turns[data.get("turn")] = addressed
                self.ours = data.get("turn") if addressed & self.sent else None
            elif kind in ("TurnEnded", "TurnFailure"):
                unaddressed = set(data.get("unaddressed_ids") or ())
                self.answered |= self.turns.pop(data.get("turn"), set()) - unaddressed
                self.ours = None
            elif kind == "TaskStateChanged" and self.ours is not None and not data.get("previous"):
                self.tasks.add(str(data.get("task_id")))
            elif kind == "TriggerAccepted" and str(data.get("task_id")) in self.tasks:
                self.tasks.discard(str(data["task_id"]))
                self.sent.add(data["trigger_id"])
            self.changed.notify_all()

    @property
    def idle(self) -> bool:
        return self.sent <= self.answered and not self.tasks

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.idle, timeout=timeout)


class Renderer:
    """Session events as lines on a rich Console; AgentStream deltas written out as they arrive."""

    def __init__(self, console: Console):
        self.console = console
        self.writing: str | None = None  # the call_id whose text is being written on the current line

    def render(self, event: dict) -> None:
        kind, data = event["kind"], event.get("data") or {}
        if kind == "AgentStream" and "delta" in data:
            if self.writing != data.get("call_id"):
                self._end_line()
                self.console.print("[cyan]agent ›[/] ", end="")
                self.writing = data.get("call_id")
            self.console.print(escape(data["delta"]), end="", highlight=False)
            return
        self._end_line()
        line = self._line(kind, data)
        if line:
            self.console.print(f"[dim]{event['seq']:>4}[/] {line}", highlight=False)

    def _end_line(self) -> None:
        if self.writing is not None:
            self.console.print()
            self.writing = None

    def _line(self, kind: str, data: dict) -> str:
        if kind == "TriggerAccepted":
            return f"[green]{escape(data.get('kind', ''))}[/] {escape(_clip(data.get('content', '')))}"
        if kind == "TurnStarted":
            return f"[bold]turn {data.get('turn')} started[/]"
        if kind == "TurnEnded":
            left = data.get("unaddressed_ids") or []
            return f"[bold]turn {data.get('turn')} ended[/]" + (f" ({len(left)} left unaddressed)" if left else "")
        if kind == "TurnFailure":
            return f"[bold red]turn {data.get('turn')} failed:[/] {escape(_clip(data.get('error', '')))}"
        if kind == "AssistantOutput":
            verdict = data.get("verdict") or {}
            if verdict.get("status") == "degraded":
                reasons = "; ".join(verdict.get("reasons") or []) or "it failed its checks"
                return (f"[bold red]AssistantOutput (unverified: {escape(_clip(reasons, 300))})[/] "
                        f"{escape(data.get('body', ''))}")
            return f"[bold cyan]AssistantOutput[/] {escape(data.get('body', ''))}"
        if kind == "AgentStream" and "tool" in data:
            mark = "✓" if data.get("ok") else "✗"
            return f"  {mark} [magenta]{escape(data['tool'])}[/] {escape(_clip(data.get('result', ''), 160))}"
        if kind == "AgentStream":
            calls = ", ".join(c.get("name", "") for c in data.get("tool_calls") or [])
            return f"[dim]AgentStream turn {data.get('turn')} ({data.get('phase')})[/]" + (
                f" calls [magenta]{escape(calls)}[/]" if calls else "")
        if kind == "TaskStateChanged":
            task = f"{data.get('tool', '')} {str(data.get('task_id', ''))[:8]}".strip()
            moved = f"{data['previous']} -> {data.get('state', '')}" if data.get("previous") else data.get("state", "")
            detail = data.get("error") or data.get("result_preview") or ""
            return (f"[yellow]TaskStateChanged[/] {escape(task)} {escape(str(moved))}"
                    + (f" [dim]{escape(_clip(detail, 160))}[/]" if detail else ""))
        if kind == "ProfileRefreshed":
            return f"[yellow]ProfileRefreshed[/] {escape(json.dumps(data))}"
        return f"{escape(kind)} {escape(_clip(json.dumps(data)))}"


class EventFollower:
    """Follows a session's events on a thread of its own, rendering each and recording progress."""

    def __init__(self, client: FathomClient, session_id: str, *, after: int, render: Callable[[dict], None],
                 progress: Progress):
        self.stop = threading.Event()
        self.failure: Exception | None = None
        self._client, self._session_id, self._after = client, session_id, after
        self._render, self._progress = render, progress
        self.thread = threading.Thread(target=self._run, name="fathom-client-events", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for event in self._client.events(self._session_id, after=self._after, stop=self.stop):
                self._render(event)
                self._progress.see(event)
        except Exception as exc:  # noqa: BLE001 - reported by the command, which then exits
            self.failure = exc
            with self._progress.changed:
                self._progress.changed.notify_all()

    def close(self) -> None:
        self.stop.set()


def profile_fields(kind: str, assignments: list[str]) -> dict:
    """FIELD=VALUE pairs of a profile (VALUE @path reads a file; preferences take JSON)."""
    fields = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or name not in PROFILE_FIELDS[kind]:
            raise ValueError(f"--{kind}-set takes FIELD=VALUE with FIELD one of {', '.join(PROFILE_FIELDS[kind])}; "
                             f"got {assignment!r}")
        if value.startswith("@"):
            value = Path(value[1:]).read_text()
        fields[name] = json.loads(value) if name == "preferences" else value
    return fields


def _json(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else response.text[:300]
        raise ClientError(response.status_code, message or response.reason_phrase)
    return body


def _sse_events(lines: Iterable[str]) -> Iterable[dict]:
    """The session events of an SSE body (comments, retry hints and error events left out)."""
    data: list[str] = []
    for line in lines:
        if line == "":
            payload = json.loads("\n".join(data)) if data else None
            if isinstance(payload, dict) and "seq" in payload:
                yield payload
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def _clip(text: str, limit: int = 300) -> str:
    text = str(text).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
