"""The local embedder's encoder (all-MiniLM-L6-v2 in numpy) against what sentence-transformers
publishes for the same model, and its guards: the package's files are checked by hash, padding
and batching change no vector, long texts are cut where sentence-transformers cuts them."""

import zipfile
from functools import lru_cache

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from lake import minilm
from lake.embedders import LocalEmbedder

# sentence-transformers' documentation (its README and the "Semantic Textual Similarity" usage page)
# prints these for SentenceTransformer("all-MiniLM-L6-v2"): cosine similarities, then Manhattan
# similarities (minus the L1 distance between the normalised vectors), to four decimals.
WEATHER = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
PUBLISHED_COSINE = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]]
PUBLISHED_MANHATTAN = [[0.0, -12.6269, -20.2167], [-12.6269, 0.0, -20.1288], [-20.2167, -20.1288, 0.0]]


@lru_cache(maxsize=1)
def _encoder() -> minilm.MiniLM:
    return minilm.MiniLM()


def test_similarities_are_the_published_ones():
    vectors = _encoder().encode(WEATHER)

    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.abs(vectors @ vectors.T - PUBLISHED_COSINE).max() < 1e-4
    manhattan = -np.abs(vectors[:, None, :] - vectors[None, :, :]).sum(axis=-1)
    assert np.abs(manhattan - PUBLISHED_MANHATTAN).max() < 1e-3


def test_a_paraphrase_is_far_closer_than_an_unrelated_sentence():
    question, paraphrase, unrelated = _encoder().encode([
        "When did Priya fix the bike's brakes?",
        "Priya repaired the brake pads on her bicycle last Tuesday.",
        "The sourdough starter needs feeding twice a day.",
    ])

    assert question @ paraphrase > 0.6
    assert question @ paraphrase - question @ unrelated > 0.4


def test_padding_in_a_batch_changes_no_vector():
    texts = ["short", "a much longer sentence about calibrating the left wheel encoder of the rover " * 3, WEATHER[0]]
    together = _encoder().encode(texts)
    alone = np.stack([_encoder().encode([text])[0] for text in texts])

    assert np.abs(together - alone).max() < 1e-5


def test_a_long_text_is_cut_at_256_tokens_as_sentence_transformers_does():
    # "the" is one token: [CLS], 254 words and [SEP] fill the 256; a 255th word is cut, a 254th is not.
    cut_a, cut_b, kept_a, kept_b = _encoder().encode(["the " * 254 + "apple", "the " * 254 + "volcano",
                                                      "the " * 253 + "apple", "the " * 253 + "volcano"])

    assert np.abs(cut_a - cut_b).max() < 1e-6
    assert np.abs(kept_a - kept_b).max() > 1e-3


def test_a_package_whose_weights_differ_is_refused(tmp_path):
    tampered = tmp_path / "model.zip"
    with zipfile.ZipFile(minilm.package_archive()) as source, zipfile.ZipFile(tampered, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "model.safetensors":
                data = data[:-1] + bytes([data[-1] ^ 1])  # one bit of one weight
            target.writestr(name, data)

    with pytest.raises(minilm.ModelUnavailable, match="model.safetensors is not the published"):
        minilm.MiniLM(tampered)


def test_the_embedder_names_its_model_and_refuses_a_width_it_cannot_make():
    assert LocalEmbedder(model="all-MiniLM-L6-v2", dimensions=384).name == "local:all-MiniLM-L6-v2"
    with pytest.raises(ImproperlyConfigured, match="EMBEDDING_DIMENSIONS=384"):
        LocalEmbedder(model="all-MiniLM-L6-v2", dimensions=768)
    with pytest.raises(ImproperlyConfigured, match="FATHOM_EMBEDDING_MODEL"):
        LocalEmbedder(model="all-mpnet-base-v2", dimensions=384)
