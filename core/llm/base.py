"""One chat interface for every backend, and the client chunkers use: cache first, then the backend,
with a concurrency limit and cost accounting. A failed call becomes an answer with `error` set, so a batch
never loses the answers that did arrive."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject
from core.infra.stopping import stop_checker
from core.infra.storage import open_cache
from core.llm.budget import budget_scope, current_budget


class LLMError(ChunkLensError):
    """A backend that could not answer (unreachable, timed out, refused) after its retries."""


@dataclass
class ChatRequest:
    prompt: str
    system: str | None = None
    json_schema: JsonObject | None = None
    temperature: float = 0.0
    max_tokens: int = 256


@dataclass
class ChatAnswer:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None


class ChatBackend(Protocol):
    key: str  # identity of backend + model, part of every cache key
    label: str
    max_concurrency: int

    def chat(self, request: ChatRequest) -> ChatAnswer: ...


@dataclass
class LLMStats:
    calls: int = 0  # answers the backend really produced (not from the cache)
    cached: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


#: the services through which a chunker asks a model, the first it needs being the one it asks: a chat client
#: (LumberChunker's) or CHOP's CNM backend over one
MODEL_NEEDS = ("chat", "llm")


def model_need(needs: Collection[str]) -> str | None:
    """Which of a chunker's `needs` asks a model (None: it asks none), so the app and the bench count its calls
    from the same service."""
    return next((need for need in MODEL_NEEDS if need in needs), None)


def llm_use(service: Any) -> tuple[int, int, int]:
    """(requests sent, tokens in, tokens out) so far by a chat client or a CNM backend over one (its `LLMStats`);
    zeros for a service that asks no model, or none."""
    stats = getattr(service, "stats", None)
    return (stats.calls, stats.tokens_in, stats.tokens_out) if isinstance(stats, LLMStats) else (0, 0, 0)


@dataclass(frozen=True)
class ModelUse:
    """A model service and its counts (`llm_use`) when some work began, so the work's requests are the difference
    at its end: a chunk run's (the bench, Chunk & compare, a Ray task) or the generated answers'."""

    service: Any
    before: tuple[int, int, int]

    @classmethod
    def of(cls, service: Any) -> ModelUse:
        return cls(service, llm_use(service))

    @classmethod
    def start(cls, get: Callable[[str], Any], needs: Collection[str]) -> ModelUse | None:
        """The model a chunker with `needs` asks (`model_need`), read through `get` (`Services.get`,
        `ChunkerContext.get`); None when it asks none."""
        need = model_need(needs)
        return None if need is None else cls.of(get(need))

    def since(self) -> tuple[int, int, int]:
        """(requests, tokens in, tokens out) since the work began."""
        now = llm_use(self.service)
        return now[0] - self.before[0], now[1] - self.before[1], now[2] - self.before[2]

    def counts(self) -> dict[str, int]:
        """`since()` by name: {"calls", "tokens_in", "tokens_out"}."""
        return dict(zip(("calls", "tokens_in", "tokens_out"), self.since()))


class AnswerCache:
    """Answers on disk keyed by backend, model and the whole request: a rerun pays nothing."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._db = open_cache(path, "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT)")

    @staticmethod
    def key(backend_key: str, request: ChatRequest) -> str:
        blob = json.dumps([backend_key, asdict(request)], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> ChatAnswer | None:
        with self._lock:
            row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return ChatAnswer(**{**json.loads(row[0]), "cached": True})

    def put(self, key: str, answer: ChatAnswer) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(asdict(answer))))
            self._db.commit()


class LLMClient:
    """What chunkers talk to: `ask_many` runs requests through the cache and the backend concurrently."""

    def __init__(self, backend: ChatBackend, cache: AnswerCache | None = None) -> None:
        self.backend = backend
        self.cache = cache
        self.stats = LLMStats()
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self.backend.key

    @property
    def label(self) -> str:
        return self.backend.label

    def ask(self, request: ChatRequest, accept: Callable[[str], bool] | None = None) -> ChatAnswer:
        """The answer, from the cache when it holds one. With `accept`, only an answer it accepts is cached, and a
        cached answer it refuses is asked again: an answer the caller cannot parse must not come back from the
        cache as good on every rerun."""
        key = AnswerCache.key(self.backend.key, request)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None and (accept is None or accept(hit.text)):
            with self._lock:
                self.stats.cached += 1
            return hit
        budget = current_budget()
        if budget is not None and getattr(self.backend, "paid", False):
            budget.charge(self.backend.label)  # LLMLimitReached stops the run: it is not an answer's error
        started = time.perf_counter()
        try:
            answer = self.backend.chat(request)
        except LLMError as exc:
            answer = ChatAnswer("", seconds=time.perf_counter() - started, error=str(exc))
        with self._lock:
            if answer.error:
                self.stats.errors += 1
            else:
                self.stats.calls += 1
                self.stats.tokens_in += answer.tokens_in
                self.stats.tokens_out += answer.tokens_out
            self.stats.seconds += answer.seconds
        if self.cache and not answer.error and (accept is None or accept(answer.text)):
            self.cache.put(key, answer)
        return answer

    def ask_many(self, requests: Sequence[ChatRequest], progress: Callable[[int, int], None] | None = None,
                 accept: Callable[[str], bool] | None = None) -> list[ChatAnswer]:
        """All requests, at most `backend.max_concurrency` at a time; answers in request order (`accept` as in
        `ask`)."""
        if not requests:
            return []
        done = 0
        lock = threading.Lock()
        budget = current_budget()  # the pool's threads work for the caller's run, under its budget
        check_stop = stop_checker()  # ... and end with it: a stopped run sends no further request

        def one(req: ChatRequest) -> ChatAnswer:
            nonlocal done
            check_stop()
            with budget_scope(budget):
                ans = self.ask(req, accept)
            with lock:
                done += 1
                if progress:
                    progress(done, len(requests))
            return ans

        workers = max(1, min(self.backend.max_concurrency, len(requests)))
        if workers == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, requests))
