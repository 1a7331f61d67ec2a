"""The JSON parser's nesting scan agrees with the depth of what the text decodes to."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fathom.api.parsers import MAX_JSON_DEPTH, nested_too_deep

TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('ab[]{}"\\\n\u00e9')), max_size=8)


def depth_of(value) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(item) for item in value.values()), default=0)
    return 0


def nested(levels: int, leaf, key: str):
    for level in range(levels):
        leaf = [leaf, "x]"] if level % 2 else {key: leaf}
    return leaf


@settings(max_examples=300, deadline=None)
@given(levels=st.integers(0, 2 * MAX_JSON_DEPTH), leaf=TRICKY_TEXT, key=TRICKY_TEXT, wide=st.booleans())
def test_the_scan_says_too_deep_exactly_when_the_value_is(levels, leaf, key, wide):
    value = nested(levels, leaf, key)
    if wide:  # many brackets in strings and shallow lists beside the deep value
        value = [value, ['[[{"', "\\\\\"", "]]"] * MAX_JSON_DEPTH]
    text = json.dumps(value, ensure_ascii=False)
    assert nested_too_deep(text) == (depth_of(value) > MAX_JSON_DEPTH)
