"""How ChunkLens writes the files it keeps, so several sessions and processes can share one workspace.

- `open_cache`: the small SQLite caches (vectors, LLM answers), in WAL mode with a generous busy timeout, usable
  from worker threads.
- `write_atomically`: a file is written to a temporary name of its own in the same folder and then renamed over
  the old one, so a reader sees the old file or the new one, never half of one, and two writers never share a
  temporary file. `durable=True` also fsyncs the file and its folder, for files whose loss loses user work.
- `locked`: an exclusive lock, held by one thread of one process at a time, for read-change-write sequences such
  as a library's document order (fcntl's `flock` between processes, a lock per path between threads). A thread
  that holds it may enter it again (a locked step may call another locked step).
- `new_folder` / `put_folder`: a folder built under a temporary name of its own and put in place in one rename, so
  a reader sees the whole folder or none; when another writer put a good one there first, that one is kept and
  this copy discarded.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
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


_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{12}\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def stale_temporaries(folder: Path) -> list[Path]:
    """The temporary files and folders (`temporary_sibling`'s names) in `folder` whose writer's process is gone:
    left by a process killed mid-write, never renamed into place, safe to remove. A live process's are kept."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    return [p for p in entries if (m := _TEMPORARY.match(p.name)) and not _alive(int(m.group(1)))]


def remove_path(path: Path) -> None:
    """Remove a file or a folder tree; gone already is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sync_folder(folder: Path) -> None:
    """fsync `folder`, so the names created or renamed in it survive a crash."""
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
        sync_folder(path.parent)


def temporary_folder(path: Path) -> Path:
    """A new empty folder beside `path`, named as `temporary_sibling` names files, for building `path` in."""
    tmp = temporary_sibling(path)
    tmp.mkdir(parents=True)
    return tmp


def put_folder(built: Path, path: Path, keep_existing: Callable[[Path], bool]) -> bool:
    """Rename the complete folder `built` to `path`; True when it is now there. When a folder is at `path` already
    (another writer finished first), it stays if `keep_existing(path)` says it is good, and `built` is removed
    (False); a bad one is moved to a temporary name, then removed, and `built` takes its place."""
    try:
        while True:
            try:
                os.rename(built, path)  # fails when `path` is a folder that is not empty
                return True
            except OSError as exc:
                if not path.is_dir() or exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            if keep_existing(path):
                shutil.rmtree(built, ignore_errors=True)
                return False
            stale = temporary_sibling(path)
            try:
                os.rename(path, stale)
            except FileNotFoundError:  # another writer moved it away first
                continue
            shutil.rmtree(stale, ignore_errors=True)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise


@contextmanager
def new_folder(path: Path, keep_existing: Callable[[Path], bool]) -> Iterator[Path]:
    """For a folder that must appear at `path` whole: yields an empty temporary folder of its own beside `path` to
    fill; when the block ends it is put in place with `put_folder`, and when the block raises it is removed."""
    tmp = temporary_folder(path)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    put_folder(tmp, path, keep_existing)


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()
_held = threading.local()  # the lock files this thread holds now


@contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold the exclusive lock named by `lock_file` (created if missing) for the `with` block, waiting for it.

    `flock` excludes other processes; the per-path thread lock excludes other threads of this process, which
    `flock` alone would not (each thread opens its own file description, but Streamlit's sessions share one
    process and several may hold the same path). A thread already holding it just goes on: locking again would
    wait for itself."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    key = str(lock_file.resolve())
    held: set[str] = _held.__dict__.setdefault("keys", set())
    if key in held:
        yield
        return
    with _thread_locks_guard:
        thread_lock = _thread_locks.setdefault(key, threading.Lock())
    with thread_lock:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.add(key)
            yield
        finally:
            held.discard(key)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
