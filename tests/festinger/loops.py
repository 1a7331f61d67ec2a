"""Festinger's text functions on one implementation of the tokeniser's loops (festinger.wordscan: the C
extension or the same loops in Python), for the tests and the bench that run against both."""

import importlib
from contextlib import contextmanager

import pytest

from festinger import _words_python, text, wordscan
from festinger.cache import model

LOOPS = ("words", "shape", "as_ascii", "Lexicon")


def compiled_loops():
    """festinger._words, or None when it was not built (installed without a compiler)."""
    try:
        return importlib.import_module("festinger._words")
    except ImportError:
        return None


def loops_named(name: str):
    """"c" or "python" -> the module; skips the test when the C one was not built."""
    loops = _words_python if name == "python" else compiled_loops()
    if loops is None:
        pytest.skip("the C extension festinger._words was not built (installed without a compiler)")
    return loops


@contextmanager
def loops_in_use(loops):
    """festinger.text and the worlds' Lexicons on `loops` meanwhile (worlds made before make a new Lexicon
    at their next count)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in LOOPS:
            patch.setattr(text, name, getattr(loops, name))
            patch.setattr(wordscan, name, getattr(loops, name))
        patch.setattr(model, "Lexicon", loops.Lexicon)
        patch.setattr(text, "_CUE_FIRST_WORDS", loops.Lexicon(text._CUE_FIRST_WORDS.words))
        _caches_clear()
        try:
            yield loops
        finally:
            _caches_clear()


def _caches_clear():
    for cached in (text._tokens, text._merged, text._cues):
        cached.cache_clear()
