"""The capabilities a run may put on its agenda (seed 004's workers), with the routing guidance every
conductor prompt carries: researcher before terminal."""

from dataclasses import dataclass

RESEARCHER, TERMINAL = "researcher", "terminal"


@dataclass(frozen=True)
class Capability:
    name: str
    description: str


CAPABILITIES = {
    RESEARCHER: Capability(RESEARCHER, "a research fire: the lake (semantic recall, expand, ascend, the lenses) and "
                                       "web_search; for questions, news, facts, anything outside this machine"),
    TERMINAL: Capability(TERMINAL, "shell commands inside the workspace's file root (no network promised); only for "
                                   "objectives that explicitly ask to run commands in the local shell"),
}

ROUTING_GUIDANCE = (
    "Routing: prefer researcher. News, the web, facts and questions about the world go to researcher. Use terminal "
    "only when the objective explicitly asks to run commands in the local shell or on local files, and never for "
    "web or news objectives. List researcher items before terminal items.")


def capabilities_offered(*, terminal_enabled: bool) -> list[str]:
    """The capability names a run of the workspace may use, researcher first."""
    return [RESEARCHER, *([TERMINAL] if terminal_enabled else [])]


def capabilities_brief(names) -> str:
    return "\n".join(f"- {name}: {CAPABILITIES[name].description}" for name in names)
