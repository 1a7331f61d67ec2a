"""Words as the lake's lexical parts see them: English stopwords (the Snowball / PostgreSQL stop
list, the words the full-text half drops too) and Snowball stemming, shared by the hashing
embedder and search's "only small words" check."""

import re
from functools import lru_cache

import snowballstemmer

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset("""
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves what which who whom this that these those am is
    are was were be been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will just don should now
    d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn
    weren won wouldn
""".split())


def words(text: str) -> list[str]:
    """Every word of `text`, lowercased, in order."""
    return WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """The words of `text` that are not stopwords, in order."""
    return [word for word in words(text) if word not in STOPWORDS]


def stems(text: str) -> list[str]:
    """The content words of `text`, stemmed ("calibrated", "calibrating" -> "calibr")."""
    return _stemmer().stemWords(content_words(text))


@lru_cache(maxsize=1)
def _stemmer():
    return snowballstemmer.stemmer("english")
