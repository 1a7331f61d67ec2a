"""The reusable proof that a workspace cannot read or change another's rows through the API.

Each app adds an `IsolationCase` builder to `tests/test_isolation.py`: given an owner's client in
workspace A, it creates rows through the API and names the paths that expose them. The test then
calls those paths with workspace B's owner key and requires that nothing of A shows or changes."""

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Probe:
    method: str
    path: str
    body: dict | None = None


@dataclass
class IsolationCase:
    # A list endpoint, and the ids of A's rows that must never appear in B's listing of it.
    list_path: str | None = None
    ids: list = field(default_factory=list)
    id_field: str = "id"
    # Reads and writes on A's rows: B must get 404 (or 403), and A's rows stay as they were.
    probes: list[Probe] = field(default_factory=list)
    # Called after the probes: True when A's rows are exactly as they were before.
    intact: Callable[[], bool] | None = None
    # Reads B may make (search, statistics): they answer 200 and show none of `ids` or `secrets`.
    reads: list[Probe] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


def listed_ids(client, path: str, id_field: str) -> set:
    response = client.get(path)
    assert response.status_code == 200, response.content
    body = response.json()
    rows = body.get("results", body) if isinstance(body, dict) else body
    return {row[id_field] for row in rows}


def assert_isolated(case: IsolationCase, intruder) -> None:
    if case.list_path:
        leaked = listed_ids(intruder, case.list_path, case.id_field) & set(case.ids)
        assert not leaked, f"{case.list_path} showed another workspace's rows: {leaked}"
    for probe in case.probes:
        response = getattr(intruder, probe.method.lower())(probe.path, probe.body, format="json")
        assert response.status_code in (403, 404), (
            f"{probe.method} {probe.path} answered {response.status_code} to another workspace: {response.content!r}"
        )
    for probe in case.reads:
        response = getattr(intruder, probe.method.lower())(probe.path, probe.body, format="json")
        assert response.status_code == 200, f"{probe.method} {probe.path} answered {response.status_code}"
        shown = [value for value in [*map(str, case.ids), *case.secrets] if value in response.content.decode()]
        assert not shown, f"{probe.method} {probe.path} showed another workspace's {shown}"
    if case.intact is not None:
        assert case.intact(), "another workspace's request changed this workspace's rows"
