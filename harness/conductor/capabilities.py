"""The capabilities a run may put on its agenda (seed 004's workers), with the routing guidance every
conductor prompt carries: researcher before terminal. The terminal is offered to a run only when the
workspace enables it AND the objective asks in so many words for the local shell, so that terminal
calls are 0 for every other objective whatever a model answers."""

import re
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


def capabilities_offered(*, terminal_enabled: bool, objective: str) -> list[str]:
    """The capability names a run of `objective` may use, researcher first."""
    return [RESEARCHER, *([TERMINAL] if terminal_enabled and explicitly_local_shell(objective) else [])]


_LOCAL_SHELL = re.compile(r"\b(local shell|in (the|my|a) (shell|terminal)|shell commands?|terminal commands?|"
                          r"command[- ]line|bash|(run|execute) (the |this |these )?commands?)\b|"
                          r"\b(run|execute)\s+`", re.IGNORECASE)


def explicitly_local_shell(objective: str) -> bool:
    """Whether the objective asks in so many words to run something in the local shell."""
    return bool(_LOCAL_SHELL.search(objective))


def capabilities_brief(names) -> str:
    return "\n".join(f"- {name}: {CAPABILITIES[name].description}" for name in names)
