"""festinger._words in Python: the same functions and class, for a machine where the C extension was not
built (no compiler at install time) or when FATHOM_PURE_PYTHON=1 asks for it (festinger/wordscan.py
chooses). The property tests in tests/festinger/test_text.py run against both and check they find what
festinger/text.py's regexes find; the C one is several times faster on a long prompt (the bench prints
both).

A word is a run of letters, digits and the joiners - . _ with the joiners stripped from its edges; a run
without a letter (a number) is no word. Letters and digits are Unicode's (str.isalnum())."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD_RE = re.compile(r"[^\W_]+(?:[-._]+[^\W_]+)*")  # festinger.text._WORD
_NUMBER_CHARS = "0123456789-._"
_BEYOND_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def words(text: str, /) -> tuple[str, ...]:
    """The words of text, in order: runs of letters, digits and - . _ with the joiners stripped from
    their edges, those without a letter dropped."""
    _check(text)
    return tuple(word for word in _WORD_RE.findall(text) if word.lstrip(_NUMBER_CHARS))


def as_ascii(text: str, /) -> str | None:
    """text with a comma for each character beyond ASCII when none of them is a letter or digit; else
    None."""
    _check(text)
    if text.isascii():
        return text
    if any(char.isalnum() for char in _BEYOND_ASCII_RE.findall(text)):
        return None
    return _BEYOND_ASCII_RE.sub(",", text)


class _Shapes(dict):
    """Character code -> its shape, filled as characters are met (str.translate's table)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if "A" <= char <= "Z" or ("\xc0" <= char <= "\xde" and char != "\xd7"):
            shaped = "A"
        elif char.isalnum() or char in "-._":
            shaped = "a"
        else:
            shaped = " " if char in " \t" else "."
        self[code] = shaped
        return shaped


_SHAPES = _Shapes()


def shape(text: str, /) -> str:
    """A character per character of text: A a capital (A-Z and Latin-1's), a another letter, digit or
    joiner, a space for a space or tab, . anything else."""
    _check(text)
    return text.translate(_SHAPES)


class Lexicon:
    """Lexicon(words): a fixed set of words, each with a count."""

    __slots__ = ("_index", "_counted", "_words")

    def __init__(self, words: Iterable[str], /):
        index: dict[str, int] = {}
        for word in tuple(words):
            if not isinstance(word, str):
                raise TypeError(f"a Lexicon holds str, not {type(word).__name__}")
            word.encode("utf-8")  # as the C Lexicon: a word with a lone surrogate is refused
            if word and word not in index:
                index[str(word)] = len(index)
        self._index = index
        self._words = tuple(index)
        self._counted: dict[str, int] = {}

    @property
    def words(self) -> tuple[str, ...]:
        """The words, in the order given (once each)."""
        return self._words

    def __len__(self) -> int:
        return len(self._words)

    def count(self, text: str, /) -> dict[str, int]:
        """Count the lexicon's words in text (as words() finds them); returns {word: occurrences} for the
        other words, first seen first."""
        index, counted, others = self._index, self._counted, {}
        for word in words(text):
            if word in index:
                counted[word] = counted.get(word, 0) + 1
            else:
                others[word] = others.get(word, 0) + 1
        return others

    def starts(self, text: str, /) -> list[int]:
        """Where the lexicon's words stand in text (as words() finds them): their offsets, in order.
        Counts nothing."""
        _check(text)
        index = self._index
        return [match.start() for match in _WORD_RE.finditer(text)
                if match.group() in index and match.group().lstrip(_NUMBER_CHARS)]

    def take(self) -> dict[str, int]:
        """{word: count} for the lexicon's words counted since the last take; their counts start again
        at 0."""
        counted, self._counted = self._counted, {}
        return dict(sorted(counted.items(), key=lambda pair: self._index[pair[0]]))


def _check(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"a text is a str, not {type(text).__name__}")
