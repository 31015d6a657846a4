"""How many requests a run may send to a paid LLM backend, and a visitor in an hour.

On a shared server every visitor spends the operator's key: a chunker spec such as `chop:size=2:overlap=1` on a
4 KB text asks hundreds of questions. The app starts a `RequestBudget` at each script run (`start_budget`) and
`core.llm.base.LLMClient` charges it before every paid request that the answer cache does not hold; the request
past either limit raises `LLMLimitReached`, one line that names the limit. Threads that work for the run (the
chunk-ahead worker, `ask_many`'s pool) carry the same budget (`current_budget`, `contextvars.copy_context`).
Without a scope (the command line, a local server) nothing is counted.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from core.infra.errors import ChunkLensError

HOUR = 3600.0


class LLMLimitReached(ChunkLensError):
    """A run or a visitor reached the operator's limit on paid LLM requests."""


class HourlyLedger:
    """Paid requests per visitor over the last hour, for every session of this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._sent: dict[str, deque[float]] = {}

    def take(self, visitor: str, limit: int) -> bool:
        """Count one request for `visitor` if fewer than `limit` went out in the last hour; False when not."""
        now = self._clock()
        with self._lock:
            sent = self._sent.setdefault(visitor, deque())
            while sent and now - sent[0] >= HOUR:
                sent.popleft()
            if len(sent) >= limit:
                return False
            sent.append(now)
            return True


#: the ledger every app session shares (one server process)
LEDGER = HourlyLedger()


@dataclass
class RequestBudget:
    """One run's allowance: `per_run` paid requests, and `per_hour` for `visitor` in `ledger` (0: no hourly cap)."""

    per_run: int
    visitor: str = ""
    per_hour: int = 0
    ledger: HourlyLedger = field(default_factory=lambda: LEDGER)
    used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def charge(self, label: str) -> None:
        """Count one paid request to `label`, or refuse it with the limit it would pass."""
        with self._lock:
            if self.used >= self.per_run:
                raise LLMLimitReached(
                    f"stopped after {self.per_run} requests to {label}: this server allows {self.per_run} paid LLM "
                    "requests per run (llm_requests_per_run); answers so far are cached, so a rerun continues")
            if self.per_hour and not self.ledger.take(self.visitor, self.per_hour):
                raise LLMLimitReached(
                    f"stopped: this library reached the server's limit of {self.per_hour} paid LLM requests per "
                    "hour (llm_requests_per_hour); try again later")
            self.used += 1


_CURRENT: ContextVar[RequestBudget | None] = ContextVar("chunklens_llm_budget", default=None)


def current_budget() -> RequestBudget | None:
    """The budget of the run this code works for, if it runs under one."""
    return _CURRENT.get()


def start_budget(budget: RequestBudget | None) -> None:
    """Put the rest of this thread's work under `budget` (None: no limit), for a run that no `with` can wrap: a
    Streamlit script run, whose page bodies are modules. Each run calls it first, so a script thread that serves
    several reruns gives each its own budget; threads started for the run copy it (`copy_context`)."""
    _CURRENT.set(budget)


@contextmanager
def budget_scope(budget: RequestBudget | None) -> Iterator[RequestBudget | None]:
    """Run the block under `budget` (None: no limit)."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)
