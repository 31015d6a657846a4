"""How ChunkLens writes the files it keeps, so several sessions and processes can share one workspace.

- `open_cache`: the small SQLite caches (vectors, LLM answers), in WAL mode with a generous busy timeout, usable
  from worker threads.
- `write_atomically`: a file is written to a temporary name of its own in the same folder and then renamed over
  the old one, so a reader sees the old file or the new one, never half of one, and two writers never share a
  temporary file. `durable=True` also fsyncs the file and its folder, for files whose loss loses user work.
- `locked`: an exclusive lock, held by one thread of one process at a time, for read-change-write sequences such
  as a library's document order (fcntl's `flock` between processes, a lock per path between threads).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def open_cache(path: Path, table_sql: str) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(table_sql)
    db.commit()
    return db


def temporary_sibling(path: Path) -> Path:
    """A name beside `path` that no other writer uses (hidden, ends in `.tmp`)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes | str, durable: bool = False) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one step; see the module docstring."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = temporary_sibling(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(payload)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_folder(path.parent)


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold the exclusive lock named by `lock_file` (created if missing) for the `with` block, waiting for it.

    `flock` excludes other processes; the per-path thread lock excludes other threads of this process, which
    `flock` alone would not (each thread opens its own file description, but Streamlit's sessions share one
    process and several may hold the same path)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    key = str(lock_file.resolve())
    with _thread_locks_guard:
        thread_lock = _thread_locks.setdefault(key, threading.Lock())
    with thread_lock:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
