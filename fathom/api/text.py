"""The one rule for text the API takes in: no NUL (PostgreSQL cannot store it) and no lone UTF-16
surrogate (it has no UTF-8 form, so nothing can store or send it back). Bodies are checked by the
JSON parser, paths and query strings by the middleware; nothing else needs to check."""

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REASON = "must not contain a NUL character (\\u0000) or a lone surrogate (\\ud800-\\udfff)"
# In JSON text either one can only be written as an escape (UTF-8 has no surrogates, and a raw NUL
# is not valid JSON): a text without these escapes decodes to storable strings only.
_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def unstorable_in_json(text: str, value) -> str | None:
    """Where the first unstorable character of `value`, decoded from the JSON `text`, is, or None."""
    if not _ESCAPED_UNSTORABLE.search(text):
        return None
    return unstorable_in(value)


def unstorable_in(value) -> str | None:
    """Where the first unstorable character of a decoded JSON value is (`$.items[2].content`), or None.
    Keys count as text too. Walks without recursion (depth is bounded by the parser, length is not),
    and builds the path only for what it finds."""
    pending = [(value, None)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                return _path(where)
        elif isinstance(item, dict):
            for key, child in item.items():
                if UNSTORABLE.search(key):
                    return _path(where) + " (a key)"
                pending.append((child, (where, f".{key}")))
        elif isinstance(item, list):
            pending.extend((child, (where, index)) for index, child in enumerate(item))
    return None


def _path(where) -> str:
    steps = []
    while where is not None:
        where, step = where
        steps.append(f"[{step}]" if isinstance(step, int) else step)
    return "$" + "".join(reversed(steps))
