"""The one rule for text the API takes in: no NUL (PostgreSQL cannot store it) and no lone UTF-16
surrogate (it has no UTF-8 form, so nothing can store or send it back). Bodies are checked by the
JSON parser, paths and query strings by the middleware; nothing else needs to check."""

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REASON = "must not contain a NUL character (\\u0000) or a lone surrogate (\\ud800-\\udfff)"


def unstorable_in(value, path: str = "$") -> str | None:
    """Where the first unstorable character of a parsed JSON value is (`$.items[2].content`), or None.
    Keys count as text too. Walks without recursion: depth is bounded by the parser, length is not."""
    pending = [(path, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                if UNSTORABLE.search(key):
                    return f"{where} (a key)"
                pending.append((f"{where}.{key}", child))
        elif isinstance(item, list):
            pending.extend((f"{where}[{index}]", child) for index, child in enumerate(item))
    return None
