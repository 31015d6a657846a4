"""Vectors read back from a file are checked before they are served.

A vector file (a workspace's cache, the machine's shared sample vectors) can be damaged: cut short by a full disk,
written by another model, edited by hand. A vector of the wrong length ends a run in an uncaught error; a NaN or an
infinity makes the index refuse the whole run ("is the disk full?") and turns every similarity it touches into
nonsense; a vector that is not unit length moves every cosine threshold. Every embedder here returns unit vectors
(sentence-transformers with `normalize_embeddings`, the onnxruntime MiniLM's own pooling, the OpenAI-compatible
embedder's division by the norm), so a stored row is sound when it has the embedder's length, is finite, and is
unit length within `UNIT_TOLERANCE`. A row that is not is never served: the caller treats it as missing and
computes it again. The check is one vectorised pass over the rows one read fetched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

#: how far a stored vector's length may be from 1. float32 unit vectors are within about 1e-6 of it; a row scaled
#: by hand or by another recipe is far outside
UNIT_TOLERANCE = 1e-3
#: the reasons a row is refused, in the order they are checked
WRONG_LENGTH, NOT_FINITE, NOT_UNIT = "wrong length", "not finite", "not unit length"


def select_blobs(db: sqlite3.Connection, keys: list[str]) -> dict[str, bytes]:
    """The stored bytes of `keys` in the `vectors` table of `db`, read 500 keys at a time (SQLite's limit on the
    parameters of one statement is near)."""
    found: dict[str, bytes] = {}
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        query = f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})"
        found.update((k, bytes(blob)) for k, blob in db.execute(query, part) if isinstance(blob, bytes | memoryview))
    return found


def usual_dim(blobs: list[bytes]) -> int | None:
    """The vector length most rows have, for an embedder that does not say its own (an OpenAI-compatible server's
    model before its first answer in this process): the rows of one embedder all have one length."""
    sizes = Counter(len(b) for b in blobs if len(b) and len(b) % 4 == 0)
    return sizes.most_common(1)[0][0] // 4 if sizes else None


def sound_rows(blobs: dict[str, bytes], dim: int | None) -> tuple[dict[str, np.ndarray], Counter[str]]:
    """The rows of `blobs` (float32 bytes by key) that are sound vectors of length `dim` (the usual length when
    None), and how many were refused for each reason."""
    refused: Counter[str] = Counter()
    if not blobs:
        return {}, refused
    dim = dim or usual_dim(list(blobs.values()))
    keys = [k for k, b in blobs.items() if dim and len(b) == 4 * dim]
    refused[WRONG_LENGTH] = len(blobs) - len(keys)
    if not keys or not dim:  # no key without a dim
        return {}, +refused
    matrix = np.frombuffer(b"".join(blobs[k] for k in keys), dtype=np.float32).reshape(len(keys), dim)
    finite = np.isfinite(matrix).all(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(matrix, axis=1)
    unit = finite & (np.abs(norms - 1.0) <= UNIT_TOLERANCE)
    refused[NOT_FINITE] = int((~finite).sum())
    refused[NOT_UNIT] = int((finite & ~unit).sum())
    return {k: matrix[i] for i, k in enumerate(keys) if unit[i]}, +refused


def refused_text(refused: Counter[str]) -> str:
    """'3 vectors (2 not finite, 1 wrong length)'."""
    total = sum(refused.values())
    parts = ", ".join(f"{n} {why}" for why, n in refused.most_common())
    return f"{total} vector{'s' if total != 1 else ''} ({parts})"


_told: set[tuple[str, str]] = set()
_told_lock = threading.Lock()


def tell_once(path: Path | str, kind: str, line: str) -> None:
    """Log `line` (a warning that names `path`) the first time this process meets a problem of `kind` with `path`:
    one line per damaged file, however many reads meet it."""
    with _told_lock:
        if (str(path), kind) in _told:
            return
        _told.add((str(path), kind))
    log.warning(line)


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file itself is damaged (not a database, or a malformed page), rather than
    busy, locked or unreachable."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in (
        sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def set_aside(path: Path) -> Path:
    """Move the damaged SQLite file `path`, with its write-ahead log and shared memory, to siblings named
    `<name>.damaged-<UTC time>`, never over an earlier copy; return the new name of the file itself."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    n = 1
    while any(Path(f"{path}{end}.damaged-{stamp}" + (f"-{n}" if n > 1 else "")).exists() for end in ("", "-wal")):
        n += 1
    suffix = f".damaged-{stamp}" + (f"-{n}" if n > 1 else "")
    for end in ("-wal", "-shm", ""):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{end}", f"{path}{end}{suffix}")
    return Path(f"{path}{suffix}")
