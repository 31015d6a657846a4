"""The embedder a spec names, behind the vector cache: the one place that knows every embedder implementation
(`core.store.embeddings` holds the interface and the torch and OpenAI ones, `core.store.onnx_embedder` the
default MiniLM on onnxruntime, built on the interface)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path

import numpy as np

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
from core.store.onnx_embedder import OnnxMiniLMEmbedder, Precision, default_model_folder, model_file
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
    machine = None if machine_vectors_off() else MachineVectorsWhenReady(inner)
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"), machine=machine)


#: "off" ignores the machine's shared vectors (to time a machine that has none, say); a folder keeps them there
#: instead of beside the ONNX models (a test's or a measurement's own, empty location)
MACHINE_VECTORS_ENV = "CHUNKLENS_MACHINE_VECTORS"


def machine_vectors_off() -> bool:
    return os.environ.get(MACHINE_VECTORS_ENV, "").lower() == "off"


def machine_vectors_path(embedder_key: str) -> Path:
    """Where the machine keeps the sample set's vectors under the embedder `embedder_key` (one file per embedder,
    beside the ONNX models unless MACHINE_VECTORS_ENV names a folder): `python -m core warm` writes it, every
    workspace reads it."""
    digest = hashlib.sha256(embedder_key.encode()).hexdigest()[:16]
    named = os.environ.get(MACHINE_VECTORS_ENV, "")
    folder = Path(named).expanduser() if named and not machine_vectors_off() else default_model_folder()
    return folder / f"sample-vectors-{digest}.sqlite"


def machine_vectors(embedder: Embedder) -> MachineVectors | None:
    """The machine's shared vectors for `embedder`, if `python -m core warm` built them, they are not switched off
    and their header says `embedder` made them (checked once per process: `first_open_problem`); None otherwise,
    with one log line for a file that is there but ignored (the vectors are then computed as usual)."""
    path = machine_vectors_path(embedder.key)
    if machine_vectors_off() or not path.is_file():
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


class MachineVectorsWhenReady:
    """The machine's file for `embedder` (`machine_vectors`), opened when it is there: until it serves, each read
    looks again (one `stat`), so a workspace made while `python -m core warm` still computes the file copies from
    it as soon as it is published. A file replaced later (a rebuild) is opened anew; one that is there but ignored
    is looked at again only when it changes."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._vectors: MachineVectors | None = None

    @property
    def path(self) -> Path:
        return machine_vectors_path(self.embedder.key)

    def current(self) -> MachineVectors | None:
        """The file opened, if it is there and may serve `embedder`'s vectors; None otherwise."""
        path = self.path
        try:
            st = path.stat()
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                self._vectors = machine_vectors(self.embedder) if stamp else None
            return self._vectors

    @property
    def ready(self) -> bool:
        return self.current() is not None

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        vectors = self.current()
        return vectors.get_many(keys) if vectors is not None else {}


def machine_file_pending(embedder: Embedder) -> Path | None:
    """The machine file `embedder` (a workspace's cached embedder) would copy from once it is there, while it does
    not serve yet; None when it serves, or the embedder reads no machine file (switched off, no cache)."""
    machine = getattr(embedder, "machine", None)
    if isinstance(machine, MachineVectorsWhenReady) and not machine.ready:
        return machine.path
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
                precision: Precision = "fp32" if spec == BUNDLED_MINILM_FP32 else "int8"
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
