"""Helpers of the harness's tests: a session tick as the worker runs it, waiting for workers'
results, reading SSE, counting a fire's writes, a list's page read in a fixed number of queries."""

from collections import Counter

from harness.fires.services import fire_turn_work
from harness.runtime import services as runtime_services
from tests.conftest import wait_for


def session_tick(*, session_id) -> str:
    """One tick of the session as the worker's task runs it: its turn's work is a fire."""
    return runtime_services.session_tick(session_id=session_id, work=fire_turn_work)


def wait_for_background_work(session=None, *, fires=None, timeout=30.0):
    """The fires' background writes (judge axes, embeddings) are done, so nothing still writes when
    the test's tables are flushed."""
    from lake.models import Delta

    def settled():
        ids = list(session.fires.values_list("pk", flat=True)) if fires is None else [f.pk for f in fires]
        judged = Delta.objects.filter(tags__overlap=[f"fire:{pk}" for pk in ids],
                                      tags__contains=["kind:judge-axes"]).count()
        workspace_id = session.workspace_id if session is not None else fires[0].workspace_id
        return judged == len(ids) and not Delta.objects.filter(workspace_id=workspace_id,
                                                               embedding__isnull=True).exists()

    wait_for(settled, timeout=timeout)


def read_sse(response, count: int = 0, until: str = "") -> list[dict]:
    events, current = [], {}
    for line in response.iter_lines():
        if line == "":
            if "data" in current:
                events.append(current)
                if len(events) == count or current.get("event") == until:
                    return events
            current = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            current[field] = value.removeprefix(" ")
    return events


def fire_write_kinds(fire) -> Counter:
    """How many deltas of each kind the fire wrote (a kind:engagement-attest counted by its verb)."""
    from lake.models import Delta

    counts = Counter()
    for tags in Delta.objects.filter(workspace_id=fire.workspace_id, tags__contains=[f"fire:{fire.pk}"]).values_list(
            "tags", flat=True):
        kinds = sorted(t for t in tags if t.startswith("kind:"))
        if "kind:engagement-attest" in kinds:
            kinds = [next(t.split(":")[0] for t in tags if t.startswith(("affirms:", "refutes:")))]
        counts["+".join(kinds)] += 1
    return counts


def page_results_in_fixed_queries(api, path: str, *, more, queries: int, assert_num_queries) -> tuple[list, list]:
    """The results of `path`'s page read in `queries` queries (django_assert_num_queries) as the rows
    stand, and again after `more()` added many: (the few, the many)."""
    api.get(path)  # the key's use is written once a minute: not counted below
    with assert_num_queries(queries):
        few = api.get(path)
    more()
    with assert_num_queries(queries):
        many = api.get(path)
    return few.json()["results"], many.json()["results"]
