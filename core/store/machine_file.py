"""The machine's shared sample vectors: a read-only file that `python -m core warm` builds once per machine and
every workspace copies from (`core.store.embedders` names it and opens it), checked before anything is copied.

The file is a vector cache (table `vectors`, keyed as `EmbeddingCache` is) plus a header (table `header`) that says
what made it: the embedder's key, the vectors' length, a digest of the model's files, and a few canary texts with
their vectors. A reader checks the header when it first opens the file in a process (`first_open_problem`): a
file without one, or made for another embedder, by other model files, of another length, or whose canaries the
model at hand no longer reproduces, is ignored as a whole. Every row read is checked too (`MachineVectors`); a
damaged row is never copied, and `warm` (`file_problem(..., full=True)`) rebuilds a file with any.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from core.infra.jsonio import JsonObject, JsonValue
from core.store.vector_checks import refused_text, select_blobs, sound_rows, tell_once

if TYPE_CHECKING:
    from core.store.embeddings import Embedder

#: the header's layout; a file of another format is ignored and rebuilt
FORMAT = 1
#: embedded when the file is written and again when a process first opens it: a model that computes differently
#: from the one that wrote the file (another version, a damaged export) gives other vectors for them
CANARY_TEXTS = (
    "Clean the air filter of the Breeze 200 every two weeks with warm water.",
    "Error E4 means the temperature sensor failed; call the service centre.",
    "Quarterly tax credit carry-forward rules for small businesses",
)
#: how far a canary's vector may move, per coordinate: the same model on the same machine gives the same vector
#: (to about 1e-7 between thread counts); another model or recipe moves it by 1e-2 or more
CANARY_TOLERANCE = 1e-4
#: rows per step of a full check (`rows_problem`)
SCAN_ROWS = 4096


def model_digest(files: Sequence[Path]) -> str:
    """SHA-256 over the names and bytes of the model's `files` ("" for an embedder with no local files: a remote
    server, whose key names its model). Computed once per process for files of the same size and time."""
    stamp = tuple((str(f), *_stat(f)) for f in files)
    with _digests_lock:
        if stamp in _digests:
            return _digests[stamp]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0")
        with open(f, "rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    with _digests_lock:
        _digests[stamp] = digest.hexdigest() if files else ""
        return _digests[stamp]


_digests: dict[tuple, str] = {}
_digests_lock = threading.Lock()


def _stat(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def make_header(embedder: Embedder, files: Sequence[Path]) -> JsonObject:
    """The header `warm` writes for vectors of `embedder`, whose model is in `files`."""
    canaries = embedder.embed(list(CANARY_TEXTS))
    return {"format": FORMAT, "embedder": embedder.key, "dim": int(canaries.shape[1]),
            "model_digest": model_digest(files),
            "canaries": [{"text": t, "vector": v.tolist()} for t, v in zip(CANARY_TEXTS, canaries)]}


def write_header(db: sqlite3.Connection, header: JsonObject) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS header (name TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT OR REPLACE INTO header (name, value) VALUES ('header', ?)", (json.dumps(header),))
    db.commit()


def read_header(db: sqlite3.Connection) -> JsonObject | None:
    """The file's header, None when it has none (sqlite3.Error for a file that is no database)."""
    has = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'header'").fetchone()
    row = db.execute("SELECT value FROM header WHERE name = 'header'").fetchone() if has else None
    try:
        header = json.loads(row[0]) if row else None
    except (TypeError, ValueError, RecursionError):
        return None
    return header if isinstance(header, dict) else None


def header_problem(header: JsonObject | None, embedder: Embedder, files: Sequence[Path]) -> str | None:
    """Why vectors under `header` are not `embedder`'s, or None when they are."""
    if header is None or header.get("format") != FORMAT:
        return "it has no header saying which model made it"
    if header.get("embedder") != embedder.key:
        return f"it was made for the embedder '{str(header.get('embedder'))[:80]}'"
    dim, header_dim = getattr(embedder, "dim", None), _dim(header)
    if header_dim is None or dim is not None and header_dim != dim:
        return f"its vectors have {str(header.get('dim'))[:20]} numbers, the embedder's {dim}"
    if header.get("model_digest") != model_digest(files):
        return "it was made by other model files"
    canaries = _canaries(header.get("canaries"))
    if canaries is None or not canaries[0] or canaries[1].shape != (len(canaries[0]), header_dim):
        return "its canary vectors are damaged"
    texts, stored = canaries
    try:
        now = embedder.embed(texts)
    except Exception as exc:  # noqa: BLE001 - any embedder's failure only costs the head start
        return f"its canary texts could not be embedded ({type(exc).__name__})"
    if now.shape != stored.shape or not np.allclose(now, stored, rtol=0, atol=CANARY_TOLERANCE):
        return "the model at hand no longer gives its canary vectors"
    return None


def _dim(header: JsonObject | None) -> int | None:
    """The vectors' length a header says (None: no header, or no whole number there)."""
    dim = header.get("dim") if header else None
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def _canaries(value: JsonValue | None) -> tuple[list[str], np.ndarray] | None:
    """The canary texts and their vectors as `make_header` writes them; None when they are not in that form."""
    if not isinstance(value, list):
        return None
    texts: list[str] = []
    vectors: list[JsonValue] = []
    for c in value:
        if not isinstance(c, dict) or not isinstance(text := c.get("text"), str):
            return None
        texts.append(text)
        vectors.append(c.get("vector"))
    try:
        return texts, np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        return None


def rows_problem(db: sqlite3.Connection, dim: int) -> str | None:
    """Why some stored rows are not sound vectors of length `dim` (every row read, SCAN_ROWS at a time), or None."""
    refused: Counter[str] = Counter()
    cursor = db.execute("SELECT key, vec FROM vectors")
    while rows := cursor.fetchmany(SCAN_ROWS):
        refused += sound_rows({k: bytes(v) if isinstance(v, bytes | memoryview) else b"" for k, v in rows}, dim)[1]
    return f"{refused_text(refused)} in it are damaged" if refused else None


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)


def file_problem(path: Path, embedder: Embedder, files: Sequence[Path], full: bool = False) -> str | None:
    """Why the file at `path` may not serve `embedder`'s vectors, or None. `full` (what `warm` asks) also reads
    every page and every row: a file cut short, or with a damaged row, is rebuilt."""
    try:
        db = _open(path)
    except sqlite3.Error as exc:
        return f"it cannot be opened ({exc})"
    try:
        header = read_header(db)
        problem = header_problem(header, embedder, files)
        if problem or not full:
            return problem
        checked = [row[0] for row in db.execute("PRAGMA quick_check")]
        if checked != ["ok"]:
            return f"it is damaged ({'; '.join(map(str, checked))[:120]})"
        dim = _dim(header)
        assert dim is not None, "header_problem refuses a file without a header saying the vectors' length"
        return rows_problem(db, dim)
    except sqlite3.Error as exc:
        return f"it cannot be read ({exc})"
    finally:
        db.close()


_opened: dict[tuple, tuple[str | None, int | None]] = {}
_opened_lock = threading.Lock()


def first_open_problem(path: Path, embedder: Embedder, files: Sequence[Path]) -> tuple[str | None, int | None]:
    """(why the file may not serve `embedder`, the vectors' length): `file_problem` once per process for one
    version of the file (its inode, size and time), so a new workspace pays nothing for the check."""
    try:
        stamp = (str(path), *_stat(path), embedder.key)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})", None
    with _opened_lock:
        if stamp in _opened:
            return _opened[stamp]
    problem = file_problem(path, embedder, files)
    verdict = (problem, None if problem else _header_dim(path))
    with _opened_lock:
        _opened[stamp] = verdict
    return verdict


def _header_dim(path: Path) -> int | None:
    db = _open(path)
    try:
        return _dim(read_header(db))
    except sqlite3.Error:
        return None
    finally:
        db.close()


class MachineVectors:
    """The machine's file opened read-only, so no workspace can change what another reads. Serves only sound rows
    of length `dim` (`core.store.vector_checks`); a damaged row is left for the caller to compute, and the first one
    met is one log line. A file that cannot be read is one log line and serves nothing from then on."""

    def __init__(self, path: Path, dim: int | None = None) -> None:
        self.path = path
        self.dim = dim
        self._lock = threading.Lock()
        self._broken = False
        self._db = _open(path)

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        """The sound vectors of `keys` the file holds; none at all once it cannot be read (a damaged or foreign file
        is only a lost head start: the caller computes them)."""
        with self._lock:
            if self._broken:
                return {}
            try:
                blobs = select_blobs(self._db, keys)
            except sqlite3.Error as exc:
                self._broken = True
                tell_once(self.path, "file", f"{self.path}: the machine's sample vectors cannot be read ({exc}); "
                                             "they are computed instead until `python -m core warm` rebuilds it")
                return {}
        found, refused = sound_rows(blobs, self.dim)
        if refused:
            tell_once(self.path, "rows", f"{self.path}: damaged rows in the machine's sample vectors (the first read "
                                         f"met {refused_text(refused)}) are computed instead; `python -m core warm` "
                                         "rebuilds the file")
        return found
