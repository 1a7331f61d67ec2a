"""Context metrics (seed 001's `context_metrics` event, sent just before a fire ends): how much tool
output the fire fed its model.

Tokens are estimated, not counted: one token per 4 characters of result text, rounded up (the
usual ratio of English text in GPT and Claude tokenizers), so the figure needs no tokenizer and
is the same for every provider."""

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class ContextMetrics:
    total_tool_calls: int = 0
    cumulative_result_chars: int = 0
    estimated_tool_result_tokens: int = 0
    largest_result: int = 0  # characters of the longest single result
    largest_result_tool: str = ""  # the tool that returned it (the first such call on a tie)
    calls_per_tool: dict[str, int] = field(default_factory=dict)

    def as_event(self) -> dict:
        """The context_metrics event's fields."""
        return asdict(self)


def context_metrics(tool_calls: Iterable) -> ContextMetrics:
    """Metrics over a fire's tool calls, in call order. Each call is a (tool name, result) pair whose
    result is the text or its length (`selectors.fire_tool_result_sizes` gives the lengths), or an
    object with `name` and `result` attributes (a FireToolCall)."""
    calls = [_name_and_chars(call) for call in tool_calls]
    total_chars = sum(chars for _, chars in calls)
    largest_tool, largest = max(calls, key=lambda call: call[1], default=("", 0))
    return ContextMetrics(
        total_tool_calls=len(calls), cumulative_result_chars=total_chars,
        estimated_tool_result_tokens=math.ceil(total_chars / CHARS_PER_TOKEN), largest_result=largest,
        largest_result_tool=largest_tool if largest else "",
        calls_per_tool=dict(sorted(Counter(name for name, _ in calls).items())))


def _name_and_chars(call) -> tuple[str, int]:
    name, result = (call.name, call.result) if hasattr(call, "name") else call
    return str(name), result if isinstance(result, int) else len(result or "")
