"""The embedder a spec names, behind the vector cache: the one place that knows every embedder implementation
(`core.store.embeddings` holds the interface and the torch and OpenAI ones, `core.store.onnx_embedder` the
default MiniLM on onnxruntime, built on the interface)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path

from core.infra.errors import ChunkLensError
from core.infra.storage import temporary_sibling
from core.store.embeddings import (
    BUNDLED_MINILM_FP32,
    BUNDLED_MINILM_INT8,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    LongText,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    bundled_minilm_path,
)
from core.store.machine_file import MachineVectors, file_problem, first_open_problem, make_header, write_header
from core.store.onnx_embedder import OnnxMiniLMEmbedder, default_model_folder, model_file
from core.store.vector_checks import tell_once


def make_embedder(spec: str = BUNDLED_MINILM_FP32, long_text: LongText = "truncate", cache_dir: Path | None = None,
                  base_url: str | None = None, api_key: str | None = None) -> Embedder:
    """`spec` is `bundled:minilm-fp32` (all-MiniLM-L6-v2 on onnxruntime), `bundled:minilm-int8` (the same model
    computing in int8), `bundled:all-MiniLM-L6-v2` (the same on torch, sentence-transformers), a local folder, a
    Hugging Face id, or `openai:<model>`."""
    inner: Embedder
    if spec.startswith("openai:"):
        inner = OpenAIEmbedder(spec.split(":", 1)[1], base_url=base_url, api_key=api_key)
    else:
        inner = local_embedder(spec, long_text)
    if cache_dir is None:
        return inner
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"), machine=machine_vectors(inner))


#: set to "off" to ignore the machine's shared vectors (to time a machine that has none, say)
MACHINE_VECTORS_ENV = "CHUNKLENS_MACHINE_VECTORS"


def machine_vectors_path(embedder_key: str) -> Path:
    """Where the machine keeps the sample set's vectors under the embedder `embedder_key` (one file per embedder,
    beside the ONNX models): `python -m core warm` writes it, every workspace reads it."""
    digest = hashlib.sha256(embedder_key.encode()).hexdigest()[:16]
    return default_model_folder() / f"sample-vectors-{digest}.sqlite"


def machine_vectors(embedder: Embedder) -> MachineVectors | None:
    """The machine's shared vectors for `embedder`, if `python -m core warm` built them, they are not switched off
    and their header says `embedder` made them (checked once per process: `first_open_problem`); None otherwise,
    with one log line for a file that is there but ignored (the vectors are then computed as usual)."""
    path = machine_vectors_path(embedder.key)
    if os.environ.get(MACHINE_VECTORS_ENV, "").lower() == "off" or not path.is_file():
        return None
    problem, dim = first_open_problem(path, embedder, model_files(embedder))
    if problem is None:
        try:
            return MachineVectors(path, dim)
        except Exception as exc:  # noqa: BLE001 - sqlite raises several types for a file it cannot open
            problem = f"it cannot be opened ({type(exc).__name__})"
    tell_once(path, "file", f"{path}: the machine's sample vectors are ignored: {problem}. They are computed as usual "
                            "until `python -m core warm` rebuilds the file.")
    return None


def model_files(embedder: Embedder) -> list[Path]:
    """The files whose bytes make `embedder`'s vectors, for the machine file's model digest: the onnxruntime
    model and its vocabulary, a sentence-transformers folder's files; none for a remote server."""
    if isinstance(embedder, OnnxMiniLMEmbedder):
        return [model_file(default_model_folder(), embedder.precision), bundled_minilm_path() / "tokenizer.json"]
    folder = getattr(embedder, "folder", None)
    if isinstance(folder, Path) and folder.is_dir():
        return sorted(p for p in folder.rglob("*") if p.is_file())
    return []


_LOCAL: dict[tuple[str, str, str], Embedder] = {}
_LOCAL_LOCK = threading.Lock()


def local_embedder(spec: str, long_text: LongText = "truncate") -> Embedder:
    """The in-process model `spec` names, loaded once per process and shared by every caller that names it.

    A model is read-only after loading and both local embedders are thread-safe, so the services of every
    workspace, settings combination and session can share one: a second library, a second typed key or a second
    test workspace costs a vector cache, not another copy of the model (about 90 MB each) and its thread pool. The
    ONNX model folder is part of the key, since it may be set per process (CHUNKLENS_MODEL_CACHE)."""
    key = (spec, long_text, str(default_model_folder()))
    with _LOCAL_LOCK:
        held = _LOCAL.get(key)
        if held is None:
            if spec in (BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8):
                precision = "fp32" if spec == BUNDLED_MINILM_FP32 else "int8"
                held = OnnxMiniLMEmbedder(long_text=long_text, precision=precision)
            else:
                held = SentenceTransformerEmbedder(spec, long_text=long_text)
            _LOCAL[key] = held
        return held


def publish_machine_vectors(cache_file: Path, embedder: Embedder) -> Path:
    """Copy the vector cache `cache_file` (vectors `embedder` computed) to the machine's file for `embedder`, with
    the header readers check (`core.store.machine_file`), and return its path: a consistent snapshot (SQLite's
    backup, whatever the cache's write-ahead log holds), without a log of its own since readers open it read-only,
    checked whole, then renamed into place so a reader never sees half a file. ChunkLensError, and nothing
    published, when the copy fails its own check."""
    target = machine_vectors_path(embedder.key)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = temporary_sibling(target)
    files = model_files(embedder)
    try:
        reader, writer = sqlite3.connect(str(cache_file)), sqlite3.connect(str(part))
        try:
            reader.backup(writer)
            writer.execute("PRAGMA journal_mode=DELETE")
            write_header(writer, make_header(embedder, files))
        finally:
            writer.close()
            reader.close()
        problem = file_problem(part, embedder, files, full=True)
        if problem:
            raise ChunkLensError(f"the sample vectors just computed were not published: {problem}")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target
