"""How many requests a run may send to a paid LLM backend, and a visitor to any paid server in an hour.

On a shared server every visitor spends the operator's key: a chunker spec such as `chop:size=2:overlap=1` on a
4 KB text asks hundreds of questions. The app starts a `RequestBudget` at each script run (`start_budget`) and
`core.llm.base.LLMClient` charges it before every paid request that the answer cache does not hold; the request
past either limit raises `LLMLimitReached`, one line that names the limit. Threads that work for the run (the
chunk-ahead worker, `ask_many`'s pool) carry the same budget (`current_budget`, `contextvars.copy_context`).
Without a scope (the command line, a local server) nothing is counted.

The hour is counted per client (`visitor`: a client address, core.infra.clients), not per session or library:
both are free to make more of. Paid embedding and rerank servers charge the same hour (`charge_remote`): one
request each, so an embedding batch (up to the embedder's batch size of texts) is one request, as it is one call to
the server and the embedding cache keeps every batch already answered. They do not count against the per-run
limit, which exists to stop one run's runaway questions, not to bound how much a run may embed.
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
    """Paid requests per visitor (client address) over the last hour, for every session of this process."""

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
    """One run's allowance: `per_run` paid LLM requests, and `per_hour` paid requests of any kind for `visitor` (the
    client, core.infra.clients) in `ledger` (0: no hourly cap)."""

    per_run: int
    visitor: str = ""
    per_hour: int = 0
    ledger: HourlyLedger = field(default_factory=lambda: LEDGER)
    used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def charge(self, label: str) -> None:
        """Count one paid LLM request to `label`, or refuse it with the limit it would pass."""
        with self._lock:
            if self.used >= self.per_run:
                raise LLMLimitReached(
                    f"stopped after {self.per_run} requests to {label}: this server allows {self.per_run} paid LLM "
                    "requests per run (llm_requests_per_run); answers so far are cached, so a rerun continues")
            self._take_hour(label)
            self.used += 1

    def charge_remote(self, label: str) -> None:
        """Count one request to a paid embedding or rerank server `label` against the visitor's hour."""
        with self._lock:
            self._take_hour(label)

    def _take_hour(self, label: str) -> None:
        if self.per_hour and not self.ledger.take(self.visitor, self.per_hour):
            raise LLMLimitReached(
                f"stopped before a request to {label}: this visitor's address reached the server's limit of "
                f"{self.per_hour} paid requests per hour (LLM, embedding and rerank: llm_requests_per_hour); try "
                "again later")


_CURRENT: ContextVar[RequestBudget | None] = ContextVar("chunklens_llm_budget", default=None)


def current_budget() -> RequestBudget | None:
    """The budget of the run this code works for, if it runs under one."""
    return _CURRENT.get()


def charge_remote(label: str) -> None:
    """Charge one request to the paid embedding or rerank server `label` to the running budget, if any: the hook
    those clients call right before each request they send (LLMLimitReached past the visitor's hour)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.charge_remote(label)


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
