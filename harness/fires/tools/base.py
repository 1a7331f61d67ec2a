"""The tool registry and what every tool receives."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fathom.llm import ToolSpec

MAIN, REVIEW = "main", "review"

# Every tool module, imported once so they register; the order is the order the model sees.
MODULES = ("plan", "semantic", "expand", "ascend", "deliberate", "lens_state", "lens_pattern", "lens_time",
           "lens_relate", "web_search", "introspect", "dispatch_helper", "mint_routine", "orient_shift", "mark_addressed",
           "see_image", "engage_feed", "fs", "background", "view_full", "respond", "review")


class ToolError(Exception):
    """A failure the model should read and can act on (bad id, nothing found, not allowed here)."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    run: Callable[[ToolContext, dict], Any]
    transactional: bool = True
    phases: tuple[str, ...] = (MAIN,)
    # For a tool that opens images (see_image): the ImageRefs its successful result puts into the
    # next model call.
    images: Callable[[str], list] | None = None

    def spec(self):
        properties = dict(self.parameters.get("properties", {}))
        if self.phases == (MAIN,) and self.name != "respond":
            properties["plan_step"] = {"type": "integer", "minimum": 1,
                                       "description": "the step of the active plan this call works on"}
        return ToolSpec(self.name, self.description, {**self.parameters, "properties": properties})


@dataclass
class ToolContext:
    """What a tool may use: the fire (workspace, session, work set, plan), where this call sits in
    the journal, and its idempotency key (fire, turn, call)."""

    fire: Any
    turn_number: int
    call_id: str
    plan_step: int | None = None
    notes: dict = field(default_factory=dict)

    @property
    def workspace(self):
        return self.fire.workspace

    @property
    def idempotency_key(self) -> str:
        return f"{self.fire.pk}:{self.turn_number}:{self.call_id}"


REGISTRY: dict[str, Tool] = {}


def register(tool: Tool) -> Tool:
    REGISTRY[tool.name] = tool
    return tool


def tools_for(*, phase: str, disabled=()) -> list[Tool]:
    _load()
    return [t for t in REGISTRY.values() if phase in t.phases and t.name not in set(disabled)]


def tool_specs(tools: list[Tool]) -> list:
    return [t.spec() for t in tools]


_loaded = False


def _load() -> None:
    """Import every tool module and put the registry in MODULES order (a module imported earlier,
    e.g. by the loop, registered its tool out of turn); tools registered elsewhere come last."""
    global _loaded
    if not _loaded:
        ordered = {}
        for module in MODULES:
            for value in vars(importlib.import_module(f"harness.fires.tools.{module}")).values():
                if isinstance(value, Tool):
                    ordered[value.name] = value
        others = {name: tool for name, tool in REGISTRY.items() if name not in ordered}
        REGISTRY.clear()
        REGISTRY.update({**ordered, **others})
        _loaded = True
