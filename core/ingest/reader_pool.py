"""How many reader workers (core.ingest.worker) may be alive at once, in the whole process and per client.

Each worker may take 1 GB of address space and two minutes. Without a bound, five simultaneous 8 KB uploads ran
five such workers at once, and a visitor with many tabs could start as many as they liked. So every worker takes
a slot first:

- at most `size` workers are alive in the process (the operator's `reader_workers`, default 2);
- one client (core.infra.clients) holds at most half of them (at least one), so a visitor's tabs wait for each
  other and never take every reader from the rest;
- work for no client (the command line, a test) is bound by the process-wide size only.

A job that finds no free slot waits, after one notice (`waiting_notice`, which the app turns into a line on the
page), and gives up after `wait` seconds with a line that says why: a sixth 1 GB process is never started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from core.infra.clients import current_client

#: the process-wide number of reader workers when the operator names none (ServerConfig.reader_workers)
DEFAULT_READERS = 2
#: how long a file waits for a reader before it is refused (seconds): a few readings of a large PDF
WAIT_SECONDS = 300.0


class ReadersBusy(Exception):
    """Every reader this job may use stayed busy for the whole wait."""


class ReaderPool:
    """Slots for reader workers: `size` in all, `share` per client."""

    def __init__(self, size: int = DEFAULT_READERS) -> None:
        self._cond = threading.Condition()
        self._busy: dict[str | None, int] = {}
        self.size = size

    @property
    def size(self) -> int:
        return self._size

    @size.setter
    def size(self, size: int) -> None:
        if size < 1:
            raise ValueError("the reader pool needs at least one worker")
        with self._cond:
            self._size = size
            self._cond.notify_all()  # a larger pool frees waiting jobs now

    @property
    def share(self) -> int:
        """How many readers one client may hold at once."""
        return max(1, self._size // 2)

    def alive(self) -> int:
        with self._cond:
            return sum(self._busy.values())

    def _free(self, client: str | None) -> bool:
        if sum(self._busy.values()) >= self._size:
            return False
        return client is None or self._busy.get(client, 0) < self.share

    @contextmanager
    def slot(self, wait: float | None = None, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold one reader slot for the block, for the current client; ReadersBusy after `wait` seconds (the
        module's WAIT_SECONDS unless given)."""
        client = current_client()
        deadline = time.monotonic() + (WAIT_SECONDS if wait is None else wait)
        with self._cond:
            waits = not self._free(client)
        if waits and on_wait is not None:
            on_wait()  # outside the lock: showing a line may take a moment
        with self._cond:
            while not self._free(client):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ReadersBusy()
                self._cond.wait(left)
            self._busy[client] = self._busy.get(client, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                self._busy[client] -= 1
                if not self._busy[client]:
                    del self._busy[client]
                self._cond.notify_all()


#: the pool every reader worker of this process takes a slot from
POOL = ReaderPool()

_NOTICE: ContextVar[Callable[[str], None] | None] = ContextVar("chunklens_reader_notice", default=None)


def waiting_notice() -> Callable[[str], None] | None:
    """What shows a line while this run's file waits for a reader (None: nothing is shown)."""
    return _NOTICE.get()


def start_waiting_notice(show: Callable[[str], None] | None) -> None:
    """Show a waiting file's line with `show` for the rest of this thread's work (a Streamlit script run)."""
    _NOTICE.set(show)


def configure(size: int) -> None:
    """Size the process's pool (the operator's `reader_workers`); workers already running finish as they are."""
    if POOL.size != size:
        POOL.size = size
