"""`cited_links`: an answer's text as paragraphs, each cited delta id (`[1a2b3c4d...]`) a link to its
page in the lake."""

import re

from django import template
from django.urls import reverse
from django.utils.html import linebreaks
from django.utils.safestring import mark_safe

register = template.Library()
CITED = re.compile(r"\[([0-9a-fA-F]{8,32})\]")


@register.filter
def cited_links(text) -> str:
    html = linebreaks(str(text or ""), autoescape=True)  # escaped first: only the links are markup
    return mark_safe(CITED.sub(
        lambda found: f'<a class="cited" href="{reverse("dashboard:delta", args=[found[1].lower()])}">'
                      f"[{found[1]}]</a>", html))
