from types import SimpleNamespace

import pytest

from harness.fires.models import Fire, FireToolCall, FireTurn
from harness.quality.metrics import ContextMetrics, context_metrics
from harness.quality.selectors import fire_tool_result_sizes


def test_metrics_over_results_given_as_text_lengths_or_rows():
    calls = [("semantic", "x" * 1000), ("expand", 250), SimpleNamespace(name="semantic", result="y" * 1001),
             ("respond", None)]
    metrics = context_metrics(calls)
    assert metrics == ContextMetrics(total_tool_calls=4, cumulative_result_chars=2251,
                                     estimated_tool_result_tokens=563,  # 2251 / 4, rounded up
                                     largest_result=1001, largest_result_tool="semantic",
                                     calls_per_tool={"expand": 1, "respond": 1, "semantic": 2})
    assert set(metrics.as_event()) >= {"total_tool_calls", "cumulative_result_chars", "estimated_tool_result_tokens",
                                       "largest_result", "calls_per_tool"}


def test_a_fire_without_tool_calls():
    assert context_metrics([]) == ContextMetrics()


def test_the_first_of_equally_large_results_is_named():
    assert context_metrics([("a", 5), ("b", 5)]).largest_result_tool == "a"


@pytest.mark.django_db
def test_tool_result_sizes_of_a_fire_in_call_order_in_one_query(workspace, django_assert_num_queries):
    fire = Fire.objects.create(workspace=workspace)
    first = FireTurn.objects.create(workspace=workspace, fire=fire, number=1)
    second = FireTurn.objects.create(workspace=workspace, fire=fire, number=2)
    FireToolCall.objects.create(workspace=workspace, fire=fire, turn=second, call_id="c", name="expand", result="abc")
    FireToolCall.objects.create(workspace=workspace, fire=fire, turn=first, call_id="b", position=1, name="semantic",
                                result="é" * 10)
    FireToolCall.objects.create(workspace=workspace, fire=fire, turn=first, call_id="a", name="plan", result="")
    with django_assert_num_queries(1):
        sizes = fire_tool_result_sizes(fire_id=fire.pk)
    assert sizes == [("plan", 0), ("semantic", 10), ("expand", 3)]
    assert context_metrics(sizes).cumulative_result_chars == 13
