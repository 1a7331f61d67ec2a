"""`fathom client`: the terminal client (harness.runtime.session_client), over REST and SSE only."""

import sys

import httpx
from django.conf import settings
from django.core.management.base import CommandError
from rich.console import Console

from harness.runtime.session_client import (
    ClientError,
    EventFollower,
    FathomClient,
    Progress,
    Renderer,
    client_target,
    profile_fields,
)

QUIT, REFRESH = "/quit", "/refresh"


def register(subparsers):
    client = subparsers.add_parser(
        "client", help="follow a session live in the terminal: profiles, session, messages, events (REST + SSE)",
        description="Creates or updates the profiles given, opens a session (or attaches to --session), follows its "
                    "events and sends each --message, then each line of standard input (/refresh queues a "
                    "RefreshProfile, /quit leaves). When input ends it waits until the turns answering what it sent "
                    "have ended, then exits.")
    client.add_argument("--url", default=settings.FATHOM_URL,
                        help="the Fathom to talk to (default: FATHOM_URL, else `url` in the config file "
                             "FATHOM_CLIENT_CONFIG, ~/.config/fathom/client.toml, else this machine's port)")
    client.add_argument("--key", default=settings.FATHOM_API_KEY,
                        help="an API key of the workspace (default: FATHOM_API_KEY, else `key` in the config file)")
    client.add_argument("--session", default="", help="attach to this session instead of opening one")
    client.add_argument("--title", default="", help="a new session's title")
    client.add_argument("--tag", default="", help="a new session's river tag")
    client.add_argument("--agent", default="", help="agent profile slug (the workspace default when omitted)")
    client.add_argument("--agent-set", action="append", default=[], metavar="FIELD=VALUE",
                        help="create or update the agent profile: name, agents_md, soul_md, identity_md, memory "
                             "(VALUE @path reads a file); repeatable")
    client.add_argument("--user", default="", help="user profile slug")
    client.add_argument("--user-set", action="append", default=[], metavar="FIELD=VALUE",
                        help="create or update the user profile: name, user_md, memory, preferences (JSON)")
    client.add_argument("--message", "-m", action="append", default=[], help="send this message first; repeatable")
    client.add_argument("--no-input", action="store_true", help="do not read standard input")
    client.add_argument("--replay", action="store_true", help="attaching: show the session's earlier events too")
    client.add_argument("--wait", type=float, default=600,
                        help="seconds to wait for the answers once input ends (default 600)")
    client.set_defaults(handler=_client)


def _client(command, options):
    if options["wait"] <= 0:
        raise CommandError("--wait must be positive")
    # The stream under Django's OutputWrapper, which would end every write (each delta) with a newline.
    console = Console(file=getattr(command.stdout, "_out", sys.stdout), highlight=False, soft_wrap=True)
    try:
        url, key = client_target(url=options["url"], key=options["key"], config=settings.FATHOM_CLIENT_CONFIG,
                                 port=settings.HTTP_PORT)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    client = FathomClient(url, key)
    follower = None
    try:
        session = _session(client, options)
        console.print(f"[bold]session[/] {session['id']} ({session.get('title') or session['tag']}) at {client.url}")
        progress = Progress()
        after = 0 if (options["replay"] or not options["session"]) else session["last_event_seq"]
        follower = EventFollower(client, session["id"], after=after, render=Renderer(console).render,
                                 progress=progress)
        for line in _inputs(options):
            if follower.failure is not None:
                break
            if line == QUIT:
                return
            if line == REFRESH:
                progress.message_sent(client.profiles_refresh(session["id"])["trigger_id"])
            elif line.strip():
                progress.message_sent(client.message_send(session["id"], line)["trigger_id"])
        if not progress.wait_idle(timeout=options["wait"]) and follower.failure is None:
            raise CommandError(f"the answers did not come within {options['wait']:g} s")
        if follower.failure is not None:
            raise CommandError(f"the event stream failed: {follower.failure}")
    except ClientError as exc:
        raise CommandError(f"{client.url} answered {exc}") from None
    except httpx.TransportError as exc:
        raise CommandError(f"cannot reach Fathom at {client.url} ({exc or type(exc).__name__}); is it running "
                           "there? (--url, FATHOM_URL or the config file say where)") from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    finally:
        if follower is not None:
            follower.close()
        client.close()


def _session(client: FathomClient, options) -> dict:
    for kind in ("agent", "user"):
        fields = profile_fields(kind, options[f"{kind}_set"])
        if fields and not options[kind]:
            raise ValueError(f"--{kind}-set needs --{kind} (the profile's slug)")
        if fields:
            client.profile_upsert(kind, options[kind], fields)
    return client.session_open(session_id=options["session"], title=options["title"], agent=options["agent"],
                               user=options["user"], tag=options["tag"])


def _inputs(options):
    yield from options["message"]
    if not options["no_input"]:
        for line in sys.stdin:
            yield line.rstrip("\n")
