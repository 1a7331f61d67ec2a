"""What the API's input checks cost: the JSON parser (size, nesting scan, decode, unstorable-text
walk) on the documented 1,000-delta batch and on hostile bodies, and the whole POST of that batch.
Prints medians; never asserts a timing. Run with `make bench`."""

import io
import json
import statistics
import time

import pytest

from fathom.api.parsers import JSONParser, nested_too_deep
from fathom.api.text import unstorable_in

RUNS = 10
BATCH = [{"content": f"moment {i}: " + "a sentence of an ordinary note, " * 100, "tags": ["kind:note"]}
         for i in range(1000)]


def median_ms(work) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def test_bench_the_parser():
    text = json.dumps(BATCH)
    parser = JSONParser()
    bodies = {
        "1,000-delta batch": text,
        "open string, 1M escaped quotes": "[" * 100 + '"' + '\\"' * 1_000_000,
        "4M empty lists, flat": "[" + "[]," * 4_000_000 + "[]]",
        "10,000 levels deep": "[" * 10_000 + "]" * 10_000,
    }
    print()
    for name, body in bodies.items():
        raw = body.encode()
        print(f"{name} ({len(raw) / 1e6:.1f} MB): nesting scan {median_ms(lambda body=body: nested_too_deep(body)):.1f} ms, "
              f"whole parse {median_ms(lambda raw=raw: _parse_or_refuse(parser, raw)):.1f} ms")
    decoded = json.loads(text)
    print(f"1,000-delta batch: json.loads {median_ms(lambda: json.loads(text)):.1f} ms, "
          f"unstorable-text walk {median_ms(lambda: unstorable_in(decoded)):.1f} ms")


@pytest.mark.django_db
def test_bench_posting_the_batch(workspace, api_client_for):
    client = api_client_for(workspace, "operator")
    body = json.dumps(BATCH).encode()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        response = client.post("/v1/deltas", data=body, content_type="application/json")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 201
    print(f"\nPOST /v1/deltas with 1,000 deltas ({len(body) / 1e6:.1f} MB): median {statistics.median(times):.0f} ms")


def _parse_or_refuse(parser, raw: bytes) -> None:
    try:
        parser.parse(io.BytesIO(raw), parser_context={})
    except Exception:  # a refusal is what a hostile body should get; the bench measures how fast
        pass
