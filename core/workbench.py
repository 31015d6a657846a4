"""What the app does, as plain functions over `core`: build the services a settings object names, run a set
of chunkers over documents, ask one question of every chunker, benchmark. No Streamlit here; pages call these
and draw the results.

Failures are per chunker: one chunker that cannot run (an LLM server that is down, say) is reported with its
message while every other chunker's results are kept.
"""

from __future__ import annotations

import contextvars
import dataclasses
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.chunkers.registry import make_chunker
from core.evaluation.agreement import agreement_lines
from core.evaluation.bench import BenchOptions, bench_dataset
from core.evaluation.generation import AnswerScore, answer_all, score_answer
from core.evaluation.metrics import Span
from core.evaluation.pooling import PoolDepth, pool_depth
from core.evaluation.questions import GeneratedSet, generate_questions
from core.evaluation.relevance import QuestionScore, RelevanceCounter, SourceOf, evaluate, same_document, score_question
from core.evaluation.verdicts import Gap, ahead_of, closest_gap, interval_text
from core.infra.errors import ChunkLensError, ConfigError
from core.infra.jsonio import loads_checked
from core.ingest.datasets import QADataset, Question, check_question, corpus_jsonl, joined, questions_jsonl
from core.ingest.documents import Document, join_documents
from core.methods.chop.accuracy import CnmAccuracy, cnm_accuracy, gold_of
from core.methods.chop.cnm import cnm_backend_of
from core.methods.chop.continuity import BoundaryScores, Decision, judge_run
from core.methods.chop.edits import CnmEdit, apply_edits, edits_digest, import_tags
from core.model import Chunk
from core.pipeline import ChunkRun, IndexedRun, chunk_documents, index_run, load_chunk_run
from core.services import Services
from core.store.embeddings import read_extent, unread_share
from core.store.hits import Hit, QueryTags
from core.store.lexical import lexical_tokens
from core.store.retrieval import RetrievalSettings, Retriever
from core.store.routing import document_titles

DEFAULT_SPECS = ["naive-500t", "recursive", "paragraph", "sentence", "cosine", "semantic", "chop",
                 "chop:retrieval=filter"]
# offered but not run by default: slower ones (a local LM forward pass per window, or an LLM call per group) and
# retrieval variants (title routing, the metadata baseline beside CHOP's filter)
MORE_SPECS = ["mg", "lg", "lgmgc", "lumber", "chop:retrieval=boost", "chop:prefix=after", "naive-500t:retrieval=route"]
Progress = Callable[[str, int, int], None]
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
class Corpus:
    """The documents as the chunkers see them (separate, or joined into one stream) and matching questions."""

    documents: list[Document]
    questions: list[Question] = field(default_factory=list)
    joined: bool = False


def make_corpus(documents: Sequence[Document], dataset: QADataset | None, join: bool) -> Corpus:
    if not documents:
        return Corpus([])
    join = join and len(documents) > 1  # one document is its own stream
    if dataset is not None:
        ds = joined(dataset) if join else dataset
        return Corpus(ds.documents, ds.questions, join)
    docs = [join_documents(list(documents), doc_id="stream")] if join else list(documents)
    return Corpus(docs, [], join)


@dataclass
class ChunkerResult:
    spec: str
    run: ChunkRun | None = None
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


def run_chunkers(services: Services, corpus: Corpus, specs: Sequence[str],
                 progress: Progress | None = None, cached_only: bool = False,
                 max_specs: int | None = None) -> dict[str, ChunkerResult]:
    """Chunk and index the corpus with every spec; a failing chunker is reported, the others still run. With
    `cached_only`, a spec whose chunk run the workspace does not hold is left out rather than chunked. More specs
    than `max_specs` is a ConfigError before any work (`check_spec_count`).

    The next spec is chunked on a worker thread while this one is embedded and indexed (`_Chunked`): chunking
    is mostly one-core Python (sentence splitting, the rule CNM backend) and indexing mostly embedding, so the
    two overlap on two cores. Chunking stays one spec at a time, in order, so chunkers that share work (the
    sentences of `sentence`, `cosine` and `semantic`, their vectors) still find it done by the one before;
    `progress` is called from the calling thread only. When the run ends early (an exception, the app's Stop or
    rerun inside `progress`), the chunking under way on the worker thread stops at its next check and caches
    nothing."""
    check_spec_count(specs, max_specs)
    results: dict[str, ChunkerResult] = {}
    ahead = ThreadPoolExecutor(1, thread_name_prefix="chunk-ahead")
    stop = threading.Event()
    try:
        pending = [_ahead(ahead, services, corpus, spec, cached_only, stop.is_set) for spec in specs[:1]]
        for i, spec in enumerate(specs):
            if progress:
                progress(spec, i, len(specs))
            chunked = pending[i].result()
            if i + 1 < len(specs):
                pending.append(_ahead(ahead, services, corpus, specs[i + 1], cached_only, stop.is_set))
            if chunked.error is not None:
                results[spec] = ChunkerResult(spec, error=chunked.error, seconds=chunked.seconds)
                continue
            if chunked.run is None:  # cached_only, and not in the workspace
                continue
            started = time.perf_counter()
            try:
                indexed = index_run(chunked.run, corpus.documents, services.embedder, services.store,
                                    lexical=services.lexical)
            except ChunkLensError as exc:
                results[spec] = ChunkerResult(spec, error=str(exc),
                                              seconds=chunked.seconds + time.perf_counter() - started)
                continue
            results[spec] = ChunkerResult(spec, chunked.run, indexed, titles=document_titles(corpus.documents),
                                          seconds=chunked.seconds + time.perf_counter() - started,
                                          llm_calls=chunked.llm_calls)
    finally:  # a stopped run (an exception, the app's Stop or rerun): the chunking under way stops at its next check
        stop.set()
        ahead.shutdown(wait=False, cancel_futures=True)
    if progress:
        progress("done", len(specs), len(specs))
    return results


def _ahead(pool: ThreadPoolExecutor, services: Services, corpus: Corpus, spec: str, cached_only: bool,
           should_stop: Callable[[], bool]) -> Future[_Chunked]:
    """`_chunk` on the worker thread, in a copy of the caller's context: the chunking works for the caller's
    run, so the run's limits (`core.llm.budget`) hold there too, and it stops when the run does."""
    return pool.submit(contextvars.copy_context().run, _chunk, services, corpus, spec, cached_only, should_stop)


@dataclass
class _Chunked:
    """One spec's chunk run (None: not in the workspace, with `cached_only`) or its error, the seconds it took
    and the LLM calls it made (chunking is where a chunker calls the LLM, one spec at a time)."""

    run: ChunkRun | None
    seconds: float
    llm_calls: int = 0
    error: str | None = None


def _chunk(services: Services, corpus: Corpus, spec: str, cached_only: bool,
           should_stop: Callable[[], bool] = lambda: False) -> _Chunked:
    """One spec's chunk run, on the worker thread; `should_stop` turns True when the run it is for was stopped,
    and the chunking ends at its next check (between documents, between a chunker's slow steps)."""
    started = time.perf_counter()
    calls_before = _llm_calls(services)
    try:
        context = services.context()
        context.should_stop = should_stop
        chunker = make_chunker(spec, context)
        if cached_only:
            chunker.prepare(corpus.documents)  # as `chunk_documents` does: its policy tags questions with it
            run = load_chunk_run(corpus.documents, chunker, services.workspace.chunk_runs)
        else:
            run = chunk_documents(corpus.documents, chunker, services.workspace.chunk_runs)
    except ChunkLensError as exc:
        return _Chunked(None, time.perf_counter() - started, error=str(exc))
    return _Chunked(run, time.perf_counter() - started, _llm_calls(services) - calls_before)


def _query_parts(services: Services) -> tuple[Any, ...]:
    """The services a run's query state was built with: a new one of any of them makes a new retriever."""
    return services.store, services.embedder, cnm_backend_of(services)


def _llm_calls(services: Services) -> int:
    backend = cnm_backend_of(services)
    return backend.stats.calls if backend is not None else 0


def restore_runs(services: Services, corpus: Corpus, specs: Sequence[str]) -> dict[str, ChunkerResult]:
    """The runs of `specs` over the corpus that the workspace still holds (a reload, a new tab, a restart), from
    the caches only."""
    return run_chunkers(services, corpus, specs, cached_only=True)


@dataclass
class QueryResult:
    spec: str
    hits: list[Hit]
    score: QuestionScore | None = None  # when the question has gold spans
    query_tags: QueryTags | None = None  # the question's tags, when the chunker has a retrieval policy
    seconds: float = 0.0
    error: str | None = None


def retriever_for(services: Services, result: ChunkerResult, retrieval: RetrievalSettings | None = None,
                  explain: bool = False) -> Retriever:
    """A new retriever over one indexed run (a dict over all its chunks, its retrieval policy: CHOP's CNM filter,
    title routing by the run's `titles`): per run, not per question, so `ask_all` keeps it in `run_query`.
    The policy is the run's own chunker's, so questions are tagged by what tagged the chunks (as in a benchmark);
    a run made by hand (no chunker) gets its spec's. `retrieval` defaults to the services' settings."""
    assert result.run is not None and result.indexed is not None
    chunker = result.run.chunker or make_chunker(result.spec, services.context())
    settings = retrieval or services.settings.retrieval_settings()
    return services.retriever(result.indexed, chunker.retrieval_policy(result.titles), settings, explain)


@dataclass
class RunQuery:
    """A run's retriever and gold-relevance counter, built once and reused by every question asked of the run.

    Both are O(chunks) to build, which at 10,000 chunks cost more than the search itself. They stay correct
    because they are checked against what they were built from: the run object, its collection and the services'
    store, embedder and CNM backend. A run is never changed in place: chunking again or editing CNM tags
    (`apply_cnm_edits`) makes a new ChunkerResult with a new run and collection, which starts without one."""

    run: ChunkRun
    collection: str
    parts: tuple[Any, Any, Any]  # (store, embedder, llm) of the services it was built with
    retrieval: RetrievalSettings
    retriever: Retriever
    _relevance: RelevanceCounter | None = None

    def fits(self, services: Services, result: ChunkerResult, retrieval: RetrievalSettings) -> bool:
        assert result.indexed is not None
        return (self.run is result.run and self.collection == result.indexed.collection
                and self.retrieval == retrieval
                and all(a is b for a, b in zip(self.parts, _query_parts(services))))

    def relevance(self) -> RelevanceCounter:
        if self._relevance is None:
            self._relevance = RelevanceCounter(self.run.spans())
        return self._relevance


def run_query(services: Services, result: ChunkerResult, retrieval: RetrievalSettings | None = None) -> RunQuery:
    """The result's RunQuery, (re)built when missing or made for other services, settings or another run.
    Its retriever explains every hit (dense and lexical rank and score), as the Query page shows them."""
    retrieval = retrieval or services.settings.retrieval_settings()
    state = result.query_state
    if state is None or not state.fits(services, result, retrieval):
        assert result.run is not None and result.indexed is not None
        state = RunQuery(result.run, result.indexed.collection, _query_parts(services),
                         retrieval, retriever_for(services, result, retrieval, explain=True))
        result.query_state = state
    return state


def ask_all(services: Services, results: dict[str, ChunkerResult], question: str, k: int,
            gold: Question | None = None, retrieval: RetrievalSettings | None = None,
            source_of: SourceOf = same_document) -> dict[str, QueryResult]:
    """One question against every chunker that ran, all searched the same way (`retrieval`, by default the
    services' settings); scored when gold spans are known (`source_of` names a joined stream's segments).

    The question is embedded once for all chunkers (they share the services' embedder); each answer's `seconds`
    is that chunker's own search and scoring, without the shared embedding. A question over MAX_QUESTION_CHARS is
    a DatasetError before any work (`check_question`)."""
    check_question(question)
    ready = {spec: r for spec, r in results.items() if r.ok}
    if not ready:
        return {}
    try:
        vectors = services.embedder.embed([question])
    except ChunkLensError as exc:
        return {spec: QueryResult(spec, [], error=str(exc)) for spec in ready}
    out: dict[str, QueryResult] = {}
    for spec, result in ready.items():
        started = time.perf_counter()
        try:
            state = run_query(services, result, retrieval)
            [answer] = state.retriever.answers([question], vectors, k)
        except ChunkLensError as exc:
            out[spec] = QueryResult(spec, [], error=str(exc))
            continue
        score = None
        if gold is not None:
            spans = [Span(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in answer.hits]
            score = score_question(gold.qid, spans, gold.references, state.relevance().count(gold.references), [k],
                                   source_of)
        out[spec] = QueryResult(spec, answer.hits, score, answer.tags, time.perf_counter() - started)
    return out


def rescore(services: Services, results: dict[str, ChunkerResult], answers: dict[str, QueryResult], gold: Question,
            k: int, retrieval: RetrievalSettings | None = None, source_of: SourceOf = same_document) -> None:
    """Score the hits already shown against `gold` (after a judgment changed it), without searching again."""
    for spec, a in answers.items():
        result = results.get(spec)
        if a.error or result is None or not result.ok:
            continue
        spans = [Span(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in a.hits]
        counter = run_query(services, result, retrieval).relevance()
        a.score = score_question(gold.qid, spans, gold.references, counter.count(gold.references), [k], source_of)


def pool_depths(corpus: Corpus, answers: dict[str, QueryResult], gold: Question, k: int) -> dict[str, PoolDepth]:
    """How many of each chunker's top k hits the question's judgments cover (core.evaluation.pooling)."""
    texts = {d.doc_id: d.text for d in corpus.documents}
    return {spec: pool_depth([Span(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in a.hits], gold, texts, k)
            for spec, a in answers.items() if not a.error}


RESULTS_DIR = Path(__file__).resolve().parents[1] / "docs" / "results"


def generate_library_set(services: Services, documents: Sequence[Document], n: int, design: str = "pick",
                         progress: Callable[[int, int], None] | None = None,
                         should_stop: Callable[[], bool] | None = None) -> tuple[GeneratedSet, bytes, bytes]:
    """Questions with verified evidence about the library's documents from the configured chat model
    (core.evaluation.questions), with the set's corpus.jsonl and questions.jsonl bytes. Every answer is cached:
    generating again after a stop asks only for the rest."""
    if services.chat is None:
        raise ChunkLensError("no chat model is configured (sidebar: CNM backend)")
    generated = generate_questions(list(documents), services.chat, n, design, progress=progress,
                                   should_stop=should_stop)
    generated.require_questions()
    return generated, corpus_jsonl(list(documents)), questions_jsonl(generated.questions)


def generated_set_trust() -> list[str]:
    """How far generated sets ranked chunkers like hand-made ones, one line per committed agreement study."""
    return agreement_lines(RESULTS_DIR)


@dataclass
class GeneratedAnswer:
    text: str
    seconds: float
    cached: bool
    error: str | None = None
    score: AnswerScore | None = None  # against the question's reference answer, when it has one


def answer_each(services: Services, answers: dict[str, QueryResult], question: str, gold: Question | None = None,
                k: int = 3, progress: Progress | None = None) -> dict[str, GeneratedAnswer]:
    """The chat model's answer from each chunker's top `k` (the same prompt and model for all), scored against
    the reference answer when the question has one. Answers are cached as they arrive. A question over
    MAX_QUESTION_CHARS is a DatasetError before any request (`check_question`)."""
    check_question(question)
    contexts = {spec: [h.chunk for h in a.hits[:k]] for spec, a in answers.items() if a.hits}
    got = answer_all(services.chat, question, contexts,
                     (lambda d, n: progress("answers", d, n)) if progress else None)
    reference = gold.answer if gold else None
    return {spec: GeneratedAnswer(a.text.strip(), a.seconds, a.cached, a.error, score_answer(a, reference))
            for spec, a in got.items()}


def benchmark(services: Services, dataset: QADataset, specs: Sequence[str], ks: Sequence[int], qualify: bool,
              join: bool, progress: Progress | None = None,
              retrieval: RetrievalSettings | None = None, answers: int = 0,
              done: Mapping[str, ChunkerResult] | None = None, max_specs: int | None = None) -> dict[str, Any]:
    """The same evaluation as `python -m core bench`, on the documents and questions in the app; with `answers`,
    the chat model also answers the first N questions from each chunker's top 3 (token F1, ROUGE-L). `done`: runs
    of these specs just made over the same documents, scored as they are rather than loaded again. More specs than
    `max_specs` is a ConfigError before any work."""
    check_spec_count(specs, max_specs)
    options = BenchOptions(ks, qualify, join, retrieval or services.settings.retrieval_settings(), answers)
    prior = {s: r.indexed for s, r in (done or {}).items() if r.ok and r.indexed is not None}
    return bench_dataset(dataset, specs, options, services, progress, prior)


MIN_JUDGED_FOR_INTERVALS = 2


def judged_only(dataset: QADataset | None) -> QADataset | None:
    """The questions judged in the app (with at least one answering span), as a set of their own; None when
    fewer than MIN_JUDGED_FOR_INTERVALS: one question has no spread to put an interval on."""
    from core.ingest.judged import QID_PREFIX

    if dataset is None:
        return None
    mine = [q for q in dataset.questions if q.qid.startswith(QID_PREFIX) and q.references]
    return dataclasses.replace(dataset, questions=mine) if len(mine) >= MIN_JUDGED_FOR_INTERVALS else None


def judged_benchmark(services: Services, judged: QADataset, done: Mapping[str, ChunkerResult], k: int,
                     join: bool, retrieval: RetrievalSettings | None = None) -> dict[str, Any]:
    """Every judged question against the chunk runs on show, scored as Benchmark scores them (hit and MRR at 1
    and k, with 95 % intervals and the paired tests), so the judging user sees how sure the comparison is."""
    specs = [s for s, r in done.items() if r.ok]
    return benchmark(services, judged, specs, sorted({1, k}), False, join, retrieval=retrieval, done=done)


def evaluate_result(services: Services, result: ChunkerResult, questions: Sequence[Question], ks: Sequence[int],
                    qualify: bool = False, retrieval: RetrievalSettings | None = None,
                    source_of: SourceOf = same_document) -> dict[str, float]:
    """Every question against one chunk run, scored the way the benchmark scores."""
    assert result.run is not None
    retriever = retriever_for(services, result, retrieval)
    hits = retriever.search_many([q.text(qualify) for q in questions], max(ks))
    spans = [[Span(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in found] for found in hits]
    scores, _ = evaluate([(q.qid, q.references) for q in questions], spans, result.run.spans(), ks, source_of)
    return scores


def tag_accuracy(corpus: Corpus, result: ChunkerResult) -> CnmAccuracy | None:
    """How right a CHOP run's tags are against the corpus's gold tags (None without tags or gold)."""
    return cnm_accuracy(result.run.chunks, corpus.documents) if result.run is not None else None


def gold_tags(corpus: Corpus, chunks: Sequence[Chunk]) -> list[dict[str, str] | None]:
    """Each chunk's gold tags (its document's, or its source document's in a stream), for showing beside it."""
    docs = {d.doc_id: d for d in corpus.documents}
    return [gold_of(c, docs) for c in chunks]


def apply_cnm_edits(services: Services, corpus: Corpus, result: ChunkerResult,
                    edits: Sequence[CnmEdit]) -> tuple[ChunkerResult, int]:
    """A new chunk run with hand-corrected tags, indexed; only chunks whose text changed are embedded anew
    (the others come from the embedding cache). Returns the run and how many chunks changed."""
    assert result.run is not None
    chunks, changed = apply_edits(result.run.chunks, edits, cnm_backend_of(services))
    identity = f"{result.run.identity}:edits={edits_digest(edits)}"
    run = ChunkRun(result.spec, identity, chunks, result.run.traces, 0.0, False, result.run.chunker)
    started = time.perf_counter()
    indexed = index_run(run, corpus.documents, services.embedder, services.store, lexical=services.lexical)
    return ChunkerResult(result.spec, run, indexed, seconds=time.perf_counter() - started,
                         titles=document_titles(corpus.documents)), changed


def replay_cnm_edits(services: Services, corpus: Corpus, result: ChunkerResult,
                     batches: Sequence[Sequence[CnmEdit]]) -> ChunkerResult:
    """The run as it was after its saved batches of hand edits (an `EditLog`), applied in order. Raises
    ChunkLensError when an edit no longer fits the run."""
    for batch in batches:
        result, _ = apply_cnm_edits(services, corpus, result, batch)
    return result


#: the largest tag file an upload may be: an export holds some 200 bytes per chunk, so this is about 100 000 chunks,
#: far more than any run the app shows
MAX_TAGS_BYTES = 20 * 2**20


def tag_file_edits(chunks: Sequence[Chunk], name: str, data: bytes) -> list[CnmEdit]:
    """The edits an uploaded tag file (an `export_tags` JSON list) asks for. The file is someone else's: text that is
    not JSON, JSON nested too deeply to parse, or entries of the wrong types are one ChunkLensError line naming it,
    never a traceback."""
    try:
        rows = loads_checked(data, name)
    except ValueError as exc:
        raise ChunkLensError(str(exc)) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ChunkLensError(f"{name}: a tag file is a JSON list of chunk entries (as 'Export tags' writes it)")
    try:
        return import_tags(chunks, rows)
    except ChunkLensError as exc:
        raise ChunkLensError(f"{name}: {exc}") from None
    except ValueError as exc:  # pydantic's ValidationError: a tag whose fields have the wrong types
        raise ChunkLensError(f"{name}: a tag is not category / nouns / model text ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:120]


def gold_overlap(chunk: Chunk, gold: Question | None) -> list[tuple[int, int]]:
    """Character ranges, relative to the chunk, that fall inside the question's gold spans."""
    if gold is None:
        return []
    out = []
    for ref in gold.references:
        if ref.doc_id == chunk.doc_id:
            s, e = max(ref.start, chunk.start), min(ref.end, chunk.end)
            if e > s:
                out.append((s - chunk.start, e - chunk.start))
    return out


@dataclass
class DemoSummary:
    """The guided demo's story: the sample manuals as one joined stream, every default chunker, product-named
    questions, scored. `report` is a bench report (hit@k, wrong_doc@k, per-question top-1 sources)."""

    corpus: Corpus
    results: dict[str, ChunkerResult]
    report: dict[str, Any]
    seconds: float

    def table(self) -> list[dict[str, Any]]:
        """One row per chunker: the headline figures, hit@1's 95 % interval, and the chunkers it is reliably
        ahead of on hit@1 (paired test over the questions, Holm-corrected)."""
        ahead = ahead_of(self.report, "hit@1")
        return [{"chunker": spec, "hit@1": r["hit@1"], "hit@1 95% interval": interval_text(r, "hit@1"),
                 "hit@10": r["hit@10"], "wrong_doc@10": r["wrong_doc@10"], "boundary F1": r.get("boundary_f1"),
                 "reliably ahead on hit@1 of": ", ".join(ahead.get(spec, [])) or "-"}
                for spec, r in self.report["results"].items()]

    def gap(self) -> Gap | None:
        """hit@1's leader against its runner-up, and how many questions would settle a gap that size."""
        return closest_gap(self.report, "hit@1")

    def continuity(self, spec: str = "chop") -> tuple[list[Decision], BoundaryScores] | None:
        """CHOP's decisions along the stream judged against the true joins, and their scores."""
        result = self.results.get(spec)
        if result is None or not result.ok or not self.corpus.documents:
            return None
        assert result.run is not None
        judged, scores = judge_run(self.corpus.documents[0], result.run.chunks)
        return (judged, scores) if scores is not None else None


def guided_demo(services: Services, retrieval: RetrievalSettings | None = None,
                progress: Progress | None = None) -> DemoSummary:
    """The whole story in one call, on the bundled sample set (never the user's library): join the seven
    manuals into one stream, run the default chunkers, ask the product-named questions, score. A second run
    comes from the caches."""
    from core.ingest.datasets import load_dataset

    started = time.perf_counter()
    dataset = load_dataset(sample_folder())
    corpus = make_corpus(dataset.documents, dataset, join=True)
    results = run_chunkers(services, corpus, DEFAULT_SPECS, progress)
    report = benchmark(services, dataset, [s for s, r in results.items() if r.ok], [1, 3, 10], True, True,
                       retrieval=retrieval, done=results)
    return DemoSummary(corpus, results, report, time.perf_counter() - started)


def embed_sample_set(services: Services, specs: Sequence[str] | None = None) -> None:
    """Run what a session on the sample set first asks for, so its vectors are in `services`' cache: the guided
    demo (the manuals joined, every default chunker, its questions, the reranker's sentences), then `specs` on the
    separate manuals (default: the default chunkers). `python -m core warm` and the test suite's warm world both
    start from it."""
    from core.ingest.datasets import load_dataset

    guided_demo(services, services.settings.retrieval_settings())
    dataset = load_dataset(sample_folder())
    run_chunkers(services, make_corpus(dataset.documents, dataset, join=False), specs or DEFAULT_SPECS)


def folder_documents(folder: Path) -> tuple[list[Document], QADataset | None]:
    """A qa-spans v1 folder's documents and set, or every PDF / DOCX / TXT / Markdown file in a plain folder."""
    from core.ingest.datasets import load_dataset
    from core.ingest.documents import SUPPORTED_SUFFIXES, load_file

    if (folder / "corpus.jsonl").exists():
        ds = load_dataset(folder)
        return ds.documents, ds
    if not folder.is_dir():
        raise ChunkLensError(f"{folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    if not files:
        raise ChunkLensError(f"{folder}: no corpus.jsonl and no {', '.join(SUPPORTED_SUFFIXES)} files")
    docs: list[Document] = []
    for path in files:
        doc = load_file(path)
        if doc.doc_id in {d.doc_id for d in docs}:
            doc.doc_id = f"{doc.doc_id}-{len(docs) + 1}"
        docs.append(doc)
    return docs, None


def sample_folder() -> Path:
    return Path(__file__).resolve().parent.parent / "sample_data" / "qa"
