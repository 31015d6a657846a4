"""Run a set of chunkers over a corpus, each to its chunks, vectors and indexes, in parallel where they can be, and
what each run leaves unread by the embedder. Failures are per chunker: one that cannot run (an LLM server that is
down, say) is reported with its message while every other chunker's results are kept."""

from __future__ import annotations

import contextvars
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from core.chunkers.registry import make_chunker
from core.evaluation.fidelity import altered_chunks_share, dropped_chars_share
from core.evaluation.relevance import RelevanceCounter
from core.evaluation.results import RunSummary
from core.infra.errors import ChunkLensError, ConfigError
from core.infra.storage import locked
from core.llm.base import ModelUse
from core.methods.chop.cnm import CnmBackend, cnm_backend_of
from core.methods.chop.edits import EditLog
from core.pipeline import chunk_documents, index_run, load_chunk_run, run_key, text_only_run_key
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.runs import ChunkedRun, IndexedRun
from core.services import Services
from core.store.embeddings import Embedder, read_extent, unread_share
from core.store.index import VectorStore
from core.store.lexical import lexical_tokens
from core.store.retrieval import RetrievalSettings, Retriever
from core.store.routing import document_titles
from core.workbench.corpus import Corpus

DEFAULT_SPECS = ["naive-500t", "recursive", "paragraph", "sentence", "cosine", "semantic", "chop",
                 "chop:retrieval=filter"]
# offered but not run by default: slower ones (a local LM forward pass per window, or an LLM call per group) and
# retrieval variants (title routing, the metadata baseline beside CHOP's filter)
MORE_SPECS = ["mg", "lg", "lgmgc", "lumber", "chop:retrieval=boost", "chop:prefix=after", "naive-500t:retrieval=route"]
Progress = Callable[[str, int, int], None]
#: called with a spec and its result as soon as that spec is done (`run_chunkers`' `on_result`)
OnResult = Callable[[str, "ChunkerResult"], None]
#: the most chunkers one run of a shared server's visitor may ask for. Each is a chunk run, a collection and its
#: embeddings kept in the workspace: 40 specs made 40 collections. The default comparison is 8 and every offered
#: chunker 15, so 12 leaves room for a few variants; more go in a second run.
MAX_SPECS_SHARED = 12


def check_spec_count(specs: Sequence[str], limit: int | None) -> None:
    """A ConfigError of one line when `specs` are more than `limit` (None: no limit, as on a local server)."""
    if limit is not None and len(specs) > limit:
        raise ConfigError(f"{len(specs)} chunkers in one run, over the limit of {limit} on this shared server: run "
                          "them in two batches")



@dataclass
class ChunkerResult:
    spec: str
    run: ChunkedRun | None = None
    indexed: IndexedRun | None = None
    error: str | None = None
    seconds: float = 0.0
    llm_calls: int = 0
    #: what asking this run a question needs and that no question changes (see `run_query`); built on first use
    query_state: RunQuery | None = field(default=None, repr=False, compare=False)
    #: doc_id -> title of the documents the run covers, what `retrieval=route` routes by (one, for a joined stream)
    titles: dict[str, str] = field(default_factory=dict, repr=False)
    #: (embedder key, the share of the embedded text it never reads), filled by `unread_share_of`
    unread: tuple[str, float] | None = field(default=None, repr=False, compare=False)
    #: the share of the documents' non-space characters no chunk covers, filled by `run_summaries`
    dropped: float | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None and self.run is not None and self.indexed is not None


@dataclass(frozen=True)
class UnreadPart:
    """Where the embedder stops reading a chunk: `start` is the document offset of the first character of the span
    that no vector reads (the chunk's end when it reads it all), `pieces` how many word pieces it leaves out."""

    start: int
    pieces: int


def unread_part(services: Services, chunk: Chunk) -> UnreadPart:
    """The part of `chunk`'s span past the embedder's input limit, in document offsets (a prefix placed before the
    span is read first, so it moves the limit towards the span's start)."""
    read, pieces = read_extent(services.embedder, chunk.embed_text)
    if pieces == 0:
        return UnreadPart(chunk.end, 0)
    before = len(chunk.prefix) + 1 if chunk.prefix and chunk.prefix_place == "before" else 0
    return UnreadPart(chunk.start + min(len(chunk.text), max(0, read - before)), pieces)


def unread_parts(services: Services, chunks: Sequence[Chunk]) -> dict[str, tuple[int, int]]:
    """chunk id -> (document offset where the embedder stops reading, word pieces left out), for the chunks it
    does not read whole (what Chunk & compare greys)."""
    parts = {c.chunk_id: unread_part(services, c) for c in chunks}
    return {cid: (p.start, p.pieces) for cid, p in parts.items() if p.pieces}


def words_only_unread(services: Services, chunk: Chunk, question: str) -> list[str]:
    """The question's words (as BM25 matches them) that the chunk holds only in the part its vector never reads:
    there the chunk matches the question for BM25 and not for the embedder."""
    read, pieces = read_extent(services.embedder, chunk.embed_text)
    if pieces == 0:
        return []
    seen, unseen = set(lexical_tokens(chunk.embed_text[:read])), set(lexical_tokens(chunk.embed_text[read:]))
    out: list[str] = []
    for word in dict.fromkeys(re.findall(r"\w+", question)):
        tokens = lexical_tokens(word)
        if tokens and all(t in unseen and t not in seen for t in tokens):
            out.append(word)
    return out


def unread_share_of(services: Services, result: ChunkerResult) -> float:
    """The share of a run's embedded text (prefix and span of every chunk) past the embedder's input limit, which
    no vector reads while BM25 reads it all (`core.store.embeddings.unread_share`); once per run and embedder."""
    assert result.run is not None
    key = services.embedder.key
    if result.unread is None or result.unread[0] != key:
        result.unread = (key, unread_share(services.embedder, [c.embed_text for c in result.run.chunks]))
    return result.unread[1]


def run_summaries(services: Services, results: Mapping[str, ChunkerResult],
                  documents: Sequence[Document] = ()) -> dict[str, RunSummary]:
    """The summary line of every run that succeeded, by spec; with the run's `documents`, what each chunker
    dropped of them (`core.evaluation.fidelity`)."""
    out = {}
    for spec, r in results.items():
        if r.ok:
            assert r.run is not None and r.indexed is not None
            parents = r.run.parents()
            altered = altered_chunks_share(r.run)
            if documents and r.dropped is None:  # once per run: the page's summary is drawn at every rerun
                r.dropped = round(dropped_chars_share(documents, r.run.chunks), 4)
            out[spec] = RunSummary(spec, len(parents), len(r.run.children()),
                                   round(sum(c.token_count for c in parents) / max(1, len(parents)), 1),
                                   round(unread_share_of(services, r), 3), round(r.seconds, 2),
                                   r.run.from_cache and r.indexed.reused, r.llm_calls,
                                   r.dropped if documents else None,
                                   None if altered is None else round(altered, 4))
    return out


def run_chunkers(services: Services, corpus: Corpus, specs: Sequence[str],
                 progress: Progress | None = None, cached_only: bool = False,
                 max_specs: int | None = None, on_result: OnResult | None = None) -> dict[str, ChunkerResult]:
    """Chunk and index the corpus with every spec; a failing chunker is reported, the others still run. With
    `cached_only`, a spec whose chunk run the workspace does not hold is left out rather than chunked. More specs
    than `max_specs` is a ConfigError before any work (`check_spec_count`).

    The next spec is chunked on a worker thread while this one is embedded and indexed (`_Chunked`): chunking
    is mostly one-core Python (sentence splitting, the rule CNM backend) and indexing mostly embedding, so the
    two overlap on two cores. Chunking stays one spec at a time, in order, so chunkers that share work (the
    sentences of `sentence`, `cosine` and `semantic`, their vectors) still find it done by the one before;
    `progress` is called from the calling thread only, and again every HEARTBEAT seconds while a spec is chunked
    and between the embedder's batches while it is indexed: the app's Stop or rerun arrives as an exception inside
    `progress`, so a long spec can be stopped while it runs. When the run ends early that way (or by any exception),
    the chunking under way on the worker thread stops at its next check (between documents, and inside one at the
    chunker's own checks: `core.infra.stopping`) and caches nothing; what finished before is kept.

    `on_result(spec, result)` is called from the calling thread with each spec's result, a failed one included,
    as soon as that spec is done and before the next one is indexed: a page shows it while the rest still run."""
    check_spec_count(specs, max_specs)
    results: dict[str, ChunkerResult] = {}
    ahead = ThreadPoolExecutor(1, thread_name_prefix="chunk-ahead")
    stop = threading.Event()
    try:
        pending = [_ahead(ahead, services, corpus, spec, cached_only, stop.is_set) for spec in specs[:1]]
        for i, spec in enumerate(specs):
            beat = _beat(progress, spec, i, len(specs)) if progress else None
            if beat:
                beat()
            chunked = _waited(pending[i], beat)
            if i + 1 < len(specs):
                pending.append(_ahead(ahead, services, corpus, specs[i + 1], cached_only, stop.is_set))
            if chunked.error is None and chunked.run is None:  # cached_only, and not in the workspace
                continue
            results[spec] = _indexed(services, corpus, spec, chunked, beat)
            if on_result:
                on_result(spec, results[spec])
    finally:  # a stopped run (an exception, the app's Stop or rerun): the chunking under way stops at its next check
        stop.set()
        ahead.shutdown(wait=False, cancel_futures=True)
    if progress:
        progress("done", len(specs), len(specs))
    return results


#: seconds between two calls of `progress` while the calling thread waits for a spec's chunking
HEARTBEAT = 0.25


def _indexed(services: Services, corpus: Corpus, spec: str, chunked: _Chunked,
             beat: Callable[..., None] | None) -> ChunkerResult:
    """One spec's result from its chunking: its chunk run indexed, or the chunking's or the indexing's error."""
    if chunked.error is not None or chunked.run is None:
        return ChunkerResult(spec, error=chunked.error, seconds=chunked.seconds)
    started = time.perf_counter()
    try:
        indexed = index_run(chunked.run, corpus.documents, services.embedder, services.store, beat,
                            lexical=services.lexical)
    except ChunkLensError as exc:
        return ChunkerResult(spec, error=str(exc), seconds=chunked.seconds + time.perf_counter() - started)
    return ChunkerResult(spec, chunked.run, indexed, titles=document_titles(corpus.documents),
                         seconds=chunked.seconds + time.perf_counter() - started, llm_calls=chunked.llm_calls)


def _beat(progress: Progress, spec: str, i: int, total: int) -> Callable[..., None]:
    """`progress(spec, i, total)` again, callable with any arguments (an embedder's `progress(done, n)`), and only
    from the thread that made it: an embedder may report from a pool thread, where Streamlit has no page."""
    caller = threading.current_thread()

    def beat(*_: object) -> None:
        if threading.current_thread() is caller:
            progress(spec, i, total)

    return beat


def _waited(future: Future[_Chunked], beat: Callable[..., None] | None) -> _Chunked:
    """The chunking's result, calling `beat` every HEARTBEAT seconds until it is there: the page's thread would
    otherwise sit in `result()` for the whole of a long spec, where no Stop reaches it."""
    while True:
        try:
            return future.result(timeout=HEARTBEAT)
        except TimeoutError:
            if beat:
                beat()


def _ahead(pool: ThreadPoolExecutor, services: Services, corpus: Corpus, spec: str, cached_only: bool,
           should_stop: Callable[[], bool]) -> Future[_Chunked]:
    """`_chunk` on the worker thread, in a copy of the caller's context: the chunking works for the caller's
    run, so the run's limits (`core.llm.budget`) hold there too, and it stops when the run does."""
    return pool.submit(contextvars.copy_context().run, _chunk, services, corpus, spec, cached_only, should_stop)


@dataclass
class _Chunked:
    """One spec's chunk run (None: not in the workspace, with `cached_only`) or its error, the seconds it took
    and the LLM calls it made (chunking is where a chunker calls the LLM, one spec at a time)."""

    run: ChunkedRun | None
    seconds: float
    llm_calls: int = 0
    error: str | None = None


def _chunk(services: Services, corpus: Corpus, spec: str, cached_only: bool,
           should_stop: Callable[[], bool] = lambda: False) -> _Chunked:
    """One spec's chunk run, on the worker thread; `should_stop` turns True when the run it is for was stopped,
    and the chunking ends at its next check (between documents, between a chunker's slow steps)."""
    started = time.perf_counter()
    model: ModelUse | None = None
    try:
        context = services.context()
        context.should_stop = should_stop
        chunker = make_chunker(spec, context)
        model = ModelUse.start(services.get, chunker.needs)
        if cached_only:
            chunker.prepare(corpus.documents)  # as `chunk_documents` does: its policy tags questions with it
            run = load_chunk_run(corpus.documents, chunker, services.workspace.chunk_runs)
        else:
            run = chunk_documents(corpus.documents, chunker, services.workspace.chunk_runs)
    except ChunkLensError as exc:
        return _Chunked(None, time.perf_counter() - started, error=str(exc))
    return _Chunked(run, time.perf_counter() - started, model.since()[0] if model else 0)


def edits_key(log: EditLog, docs: Sequence[Document], identity: str) -> str:
    """The key a run's hand edits are saved under in a library's `log`: the run's key (`run_key`, the documents as
    chunked). Edits saved when that key held the doc ids and texts only (`text_only_run_key`) are moved to it the
    first time the run is opened, under the log's lock, so no hand work is lost to the new key. The log is the
    library's own, so what it holds under the old key are that library's edits, never another's."""
    key = run_key(docs, identity)
    old = text_only_run_key(docs, identity)
    if old != key and log.path(old).exists():
        with locked(log.folder / ".lock"):
            if log.path(old).exists() and not log.path(key).exists():
                log.path(old).replace(log.path(key))
    return key


def restore_runs(services: Services, corpus: Corpus, specs: Sequence[str]) -> dict[str, ChunkerResult]:
    """The runs of `specs` over the corpus that the workspace still holds (a reload, a new tab, a restart), from
    the caches only."""
    return run_chunkers(services, corpus, specs, cached_only=True)


#: the services a run's query state was built with: its store, embedder and CNM backend (None where none is built)
QueryParts = tuple[VectorStore, Embedder, CnmBackend | None]


def query_parts(services: Services) -> QueryParts:
    """The services a run's query state was built with: a new one of any of them makes a new retriever."""
    return services.store, services.embedder, cnm_backend_of(services)


@dataclass
class RunQuery:
    """A run's retriever and gold-relevance counter, built once and reused by every question asked of the run.

    Both are O(chunks) to build, which at 10,000 chunks cost more than the search itself. They stay correct
    because they are checked against what they were built from: the run object, its collection and the services'
    store, embedder and CNM backend. A run is never changed in place: chunking again or editing CNM tags
    (`apply_cnm_edits`) makes a new ChunkerResult with a new run and collection, which starts without one."""

    run: ChunkedRun
    collection: str
    parts: QueryParts  # of the services it was built with
    retrieval: RetrievalSettings
    retriever: Retriever
    _relevance: RelevanceCounter | None = None

    def fits(self, services: Services, result: ChunkerResult, retrieval: RetrievalSettings) -> bool:
        assert result.indexed is not None
        return (self.run is result.run and self.collection == result.indexed.collection
                and self.retrieval == retrieval
                and all(a is b for a, b in zip(self.parts, query_parts(services))))

    def relevance(self) -> RelevanceCounter:
        if self._relevance is None:
            self._relevance = RelevanceCounter(self.run.spans())
        return self._relevance
