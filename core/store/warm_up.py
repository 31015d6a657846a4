"""One warm-up at a time per machine file, and what it is doing, for anyone who would otherwise compute the same
vectors: `python -m core warm` holds an exclusive `flock` on a file beside the machine's sample vectors while it
checks or computes them, and writes its progress beside them. A second warm-up waits for the first and then finds
the file made; the guided demo waits for the file instead of computing the same vectors a second time.

The lock is the kernel's: it is released when the warm-up's process ends, however it ends (a killed warm-up leaves
a lock file and perhaps a progress file behind, but no lock held). A reader asks `running` without waiting: a
shared lock tried without blocking fails only while a warm-up holds the exclusive one.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from core.infra.storage import write_atomically

#: how often, and for how long, a warm-up retries a lock it did not get at once before it says it waits: a reader's
#: look (`running`) holds it for a few microseconds, another warm-up for minutes
FIRST_TRIES = 20
TRY_EVERY = 0.01


def lock_path(target: Path) -> Path:
    """The lock file of the machine file `target`."""
    return target.with_name(target.name + ".lock")


def progress_path(target: Path) -> Path:
    """Where the warm-up building `target` says how far it is."""
    return target.with_name(target.name + ".progress.json")


@dataclass(frozen=True)
class WarmProgress:
    """How far the warm-up is: the step under way, steps done and all its steps, and its process id."""

    stage: str
    done: int
    total: int
    pid: int

    def text(self) -> str:
        return f"{self.stage}, step {min(self.done + 1, self.total)} of {self.total}" if self.total else self.stage


def read_progress(target: Path) -> WarmProgress | None:
    """The progress the warm-up building `target` wrote last; None when there is none or it cannot be read (it is
    only ever a label: nothing is decided on it)."""
    try:
        raw = json.loads(progress_path(target).read_text(encoding="utf-8"))
        return WarmProgress(str(raw["stage"])[:200], int(raw["done"]), int(raw["total"]), int(raw["pid"]))
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None


def running(target: Path) -> bool:
    """Whether a warm-up holds the lock of `target` now (never waits)."""
    try:
        fd = os.open(lock_path(target), os.O_RDONLY)
    except OSError:
        return False  # no lock file: no warm-up ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing the description drops a shared lock it got
    return False


class WarmUpLock:
    """The exclusive lock of the machine file `target`, for one warm-up: `acquire` takes it, waiting for a warm-up
    that holds it (`waited` then says so, and `on_wait` was called once with that warm-up's progress); `report`
    writes this warm-up's progress for readers; `release` (or the end of the process) frees it."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.waited = False
        self._fd: int | None = None
        self._last: tuple[str, int, int] | None = None

    def acquire(self, on_wait: Callable[[WarmProgress | None], None] | None = None) -> WarmUpLock:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path(self.target), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            for _ in range(FIRST_TRIES):
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(TRY_EVERY)
            else:
                self.waited = True
                if on_wait:
                    on_wait(read_progress(self.target))
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def report(self, stage: str, done: int, total: int) -> None:
        """Write `stage`, `done` of `total` where readers look (`read_progress`), when it changed."""
        if (stage, done, total) == self._last:
            return
        self._last = (stage, done, total)
        write_atomically(progress_path(self.target), json.dumps(asdict(WarmProgress(stage, done, total, os.getpid()))))

    def release(self) -> None:
        if self._fd is None:
            return
        progress_path(self.target).unlink(missing_ok=True)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> WarmUpLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, *_: object) -> None:
        self.release()
