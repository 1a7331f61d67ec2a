"""Cue extraction against the labelled sentences (tests/festinger/cue_sentences.py): precision and recall
per kind of sentence and overall, and the scan's time per sentence with each implementation of the loops.

    .venv/bin/python -m pytest tests/bench/bench_cues.py -s -q -o python_files='bench_*.py'
"""

import time

from festinger import _words_python, text
from tests.festinger.cue_sentences import CUES
from tests.festinger.loops import compiled_loops, loops_in_use


def _facts(sentence):
    return {(t.concept, t.parent, t.dimension, t.is_isa) for t in text.cues(sentence)}


def _score(rows):
    found = right = expected = 0
    for _category, sentence, labels in rows:
        got, want = _facts(sentence), set(labels)
        found, right, expected = found + len(got), right + len(got & want), expected + len(want)
    precision = right / found if found else 1.0
    recall = right / expected if expected else 1.0
    return precision, recall, found, right, expected


def test_bench_cue_precision_and_recall():
    print(f"\ncue extraction on {len(CUES)} labelled sentences")
    print(f"{'kind':<12} {'sentences':>9} {'facts':>6} {'found':>6} {'right':>6} {'precision':>9} {'recall':>7}")
    for category in dict.fromkeys(category for category, _s, _l in CUES):
        rows = [row for row in CUES if row[0] == category]
        precision, recall, found, right, expected = _score(rows)
        print(f"{category:<12} {len(rows):>9} {expected:>6} {found:>6} {right:>6} {precision:>9.3f} {recall:>7.3f}")
    precision, recall, found, right, expected = _score(CUES)
    print(f"{'all':<12} {len(CUES):>9} {expected:>6} {found:>6} {right:>6} {precision:>9.3f} {recall:>7.3f}")
    for _category, sentence, labels in CUES:
        if _facts(sentence) != set(labels):
            print(f"  miss: {sentence!r}: found {sorted(_facts(sentence))}, labelled {sorted(labels)}")
    for name, loops in (("c", compiled_loops()), ("python", _words_python)):
        if loops is None:
            print(f"{name}: not built")
            continue
        with loops_in_use(loops):
            sentences = [sentence + f" {n}" for n in range(20) for _c, sentence, _l in CUES]  # no cache hits
            started = time.perf_counter()
            for sentence in sentences:
                text.cues(sentence)
            elapsed = time.perf_counter() - started
        print(f"scan with the {name} loops: {elapsed / len(sentences) * 1e6:.1f} us per sentence "
              "(a shared machine: noisy)")
    assert precision >= 0.95 and recall >= 0.95
