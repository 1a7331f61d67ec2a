"""The two places a feature shows itself on the dashboard, as registries.

A side panel is a box beside the feed: `context(current)` returns what its template needs, or None
when it has nothing to say (the panel is then left out). A card section is a part of every fire's
card: `load(workspace, fires)` returns {fire id: context} for a whole page of cards at once, in a
fixed number of queries (never one per card), and a fire missing from the result shows no section.

A feature that lands adds one function and one template (see `sections.py`); the feed, the loop
view and the live stream pick it up."""

from collections.abc import Callable
from dataclasses import dataclass

from fathom.errors import NotFoundError


@dataclass(frozen=True)
class SidePanel:
    name: str
    title: str
    template: str
    context: Callable


@dataclass(frozen=True)
class CardSection:
    name: str
    template: str
    load: Callable


@dataclass(frozen=True)
class Rendered:
    """A panel or section ready for its template: `ctx` is what its function returned."""

    name: str
    title: str
    template: str
    ctx: dict


SIDE_PANELS: list[SidePanel] = []
CARD_SECTIONS: list[CardSection] = []


def side_panel(*, name: str, title: str, template: str):
    def register(function):
        SIDE_PANELS.append(SidePanel(name=name, title=title, template=template, context=function))
        return function

    return register


def card_section(*, name: str, template: str):
    def register(function):
        CARD_SECTIONS.append(CardSection(name=name, template=template, load=function))
        return function

    return register


def side_panels_render(current) -> list[Rendered]:
    rendered = []
    for panel in SIDE_PANELS:
        ctx = panel.context(current)
        if ctx is not None:
            rendered.append(Rendered(name=panel.name, title=panel.title, template=panel.template, ctx=ctx))
    return rendered


def card_sections_render(workspace, fires) -> dict:
    """{fire id: [Rendered, ...]} for a page of fires, in the registry's order."""
    by_fire: dict = {fire.pk: [] for fire in fires}
    for section in CARD_SECTIONS:
        for fire_id, ctx in section.load(workspace, fires).items():
            if fire_id in by_fire:
                by_fire[fire_id].append(Rendered(name=section.name, title="", template=section.template, ctx=ctx))
    return by_fire


def side_panel_render(current, name: str) -> Rendered | None:
    """The side panel `name` alone (None when it has nothing to say); NotFoundError for no such panel."""
    panel = next((panel for panel in SIDE_PANELS if panel.name == name), None)
    if panel is None:
        raise NotFoundError(f"no side panel {name!r}")
    ctx = panel.context(current)
    return None if ctx is None else Rendered(name=panel.name, title=panel.title, template=panel.template, ctx=ctx)
