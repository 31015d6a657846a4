"""Ask one question of every chunker's run: a retriever per run, kept while its run and services are unchanged,
the hits scored against the gold spans when there are any, and generated answers from the hits."""

from __future__ import annotations

import time
from dataclasses import dataclass

from core.chunkers.registry import make_chunker
from core.evaluation.generation import AnswerScore, answer_all, score_answer
from core.evaluation.pooling import PoolDepth, pool_depth
from core.evaluation.relevance import QuestionScore, SourceOf, same_document, score_question
from core.infra.errors import ChunkLensError
from core.ingest.datasets import check_question
from core.schema.chunks import Chunk
from core.schema.hits import Hit, QueryTags
from core.schema.questions import Question
from core.services import Services
from core.store.retrieval import RetrievalSettings, Retriever
from core.workbench.corpus import Corpus
from core.workbench.runs import ChunkerResult, Progress, RunQuery, query_parts


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


def run_query(services: Services, result: ChunkerResult, retrieval: RetrievalSettings | None = None) -> RunQuery:
    """The result's RunQuery, (re)built when missing or made for other services, settings or another run.
    Its retriever explains every hit (dense and lexical rank and score), as the Query page shows them."""
    retrieval = retrieval or services.settings.retrieval_settings()
    state = result.query_state
    if state is None or not state.fits(services, result, retrieval):
        assert result.run is not None and result.indexed is not None
        state = RunQuery(result.run, result.indexed.collection, query_parts(services),
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
            spans = [h.span for h in answer.hits]
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
        spans = [h.span for h in a.hits]
        counter = run_query(services, result, retrieval).relevance()
        a.score = score_question(gold.qid, spans, gold.references, counter.count(gold.references), [k], source_of)


def pool_depths(corpus: Corpus, answers: dict[str, QueryResult], gold: Question, k: int) -> dict[str, PoolDepth]:
    """How many of each chunker's top k hits the question's judgments cover (core.evaluation.pooling)."""
    texts = {d.doc_id: d.text for d in corpus.documents}
    return {spec: pool_depth([h.span for h in a.hits], gold, texts, k)
            for spec, a in answers.items() if not a.error}



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
