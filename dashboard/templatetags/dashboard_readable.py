"""`readable`: a JSON value (a fire's response, review pass, writes, work set) as HTML an operator reads:
objects as definition lists with human labels (an empty or null field left out), lists as lists, delta ids as links to their page in the
lake, proposal ids as links to the proposal, `[id]` citations in text as links, text escaped."""

import json

from django import template
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

from dashboard.templatetags.dashboard_links import cited_links
from lake.models import ID_LENGTH

register = template.Library()
PROPOSAL_KEYS = ("proposal_id",)


@register.filter
def readable(value) -> str:
    return mark_safe(_html(value, key=""))


def _html(value, *, key: str) -> str:
    if isinstance(value, dict):
        shown = {name: item for name, item in value.items() if item not in (None, "")}  # what was said
        if not shown:
            return '<span class="quiet">none</span>'
        rows = "".join(f"<dt>{escape(_label(name))}</dt><dd>{_html(item, key=str(name))}</dd>"
                       for name, item in shown.items())
        return f'<dl class="readable">{rows}</dl>'
    if isinstance(value, list):
        if not value:
            return '<span class="quiet">none</span>'
        items = "".join(f"<li>{_html(item, key=key)}</li>" for item in value)
        return f'<ul class="readable">{items}</ul>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return '<span class="quiet">—</span>'
    if key in PROPOSAL_KEYS and str(value).isdigit():
        return format_html('<a href="{}">proposal #{}</a>', reverse("dashboard:proposal", args=[int(value)]), value)
    text = str(value)
    if _is_delta_id(text):
        return format_html('<a class="cited" href="{}"><code>{}</code></a>', reverse("dashboard:delta", args=[text]),
                           text)
    parsed = _json_or_none(text)
    if parsed is not None:
        return _html(parsed, key=key)
    return str(cited_links(text))


def _label(name) -> str:
    text = str(name).replace("_", " ")
    return text[:1].upper() + text[1:]


def _is_delta_id(text: str) -> bool:
    return len(text) == ID_LENGTH and all(c in "0123456789abcdef" for c in text)


def _json_or_none(text: str):
    """A tool's result kept as JSON text (the review pass's), parsed; None for ordinary text."""
    if not text.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None
