"""`python -m core bench`: chunk, index, query and score qa-spans v1 folders with any set of chunkers.

The JSON it writes is a contract other tools script against:
{"dataset": str, "embedder": str, "results": {"<chunker>": {"hit@K": .., "mrr@K": .., "ndcg@K": .., "dcg@K": ..,
 "recall@K": .., "span_recall@K": .., "span_precision@K": .., "span_iou@K": .., "n_chunks": int,
 "mean_chunk_tokens": float, "seconds": {"chunk": .., "embed": .., "index": .., "query": ..}}}}
plus extra keys (standard deviations, `wrong_doc@K`, `seconds.lexical` when BM25 is used, settings, each
method's report fields (`core.evaluation.fields.register_report_fields`: boundary P/R/F1, LGMGC's pass counts;
`words_per_second` only for the scorer's chunkers), `retrieval_applied` (what a chunker's retrieval policy did with
the questions, counted: {"filter": 48, "none (no model)": 2}, {"none (one document: no titles to route by)": 56};
{} without a policy), `dropped_chars_share` and `altered_chunks_share` (`core.evaluation.fidelity`), and at the top
level "retrieval": {"mode": "dense"|"bm25"|"hybrid", ...} and "peer_versions" (every peer library's version).
A set with gold spans also gets Chroma's `span_precision_omega` (with `_std` and `_ci95`: `core.evaluation.chroma`);
`--protocol chroma` adds "protocol" and "evidence_cap" at the top level and, per chunker, `span_recall_evidence`,
`span_precision_evidence`, `span_iou_evidence` (Chroma's retrieve=-1), `evidence_chunks` and `per_corpus`
({corpus: {"n_questions", every metric's mean, `_std`, `_ci95`}}).
With several --data folders the file holds a list of them. Keys are added, never renamed.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core import text as T
from core.chunkers.base import Chunker
from core.chunkers.peers import peer_versions
from core.chunkers.registry import make_chunker
from core.evaluation.chroma import EVIDENCE_CAP, EVIDENCE_KEYS, EvidenceIndex, corpus_of, evidence_scores
from core.evaluation.chroma import headline as chroma_headline
from core.evaluation.chroma import per_corpus as corpus_means
from core.evaluation.collisions import top1_sources
from core.evaluation.fields import report_fields, shown_fields
from core.evaluation.pooling import pool_depth
from core.evaluation.relevance import evaluate, source_resolver
from core.evaluation.report import metric_cell, pair_lines, retrieval_phrase
from core.evaluation.results import BenchReport, ChunkerReport
from core.evaluation.significance import compare, headline_metrics, intervals
from core.ingest.datasets import QADataset, joined
from core.llm.base import ModelUse
from core.pipeline import ProgressFn, chunk_documents, corpus_fingerprint, index_run
from core.schema.documents import Document
from core.schema.hits import Hit
from core.schema.questions import Question
from core.schema.runs import IndexedRun
from core.schema.spans import Span
from core.services import Services
from core.store.embeddings import unread_share
from core.store.retrieval import RetrievalSettings
from core.store.routing import document_titles


@dataclass
class BenchOptions:
    """What is measured; the services that do the work come separately (`core.services.build_services`)."""

    ks: Sequence[int]
    qualify_queries: bool = False
    join: bool = False
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)  # one mode for every chunker
    answers: int = 0  # generate answers (with the chat service) for the first N questions and score them; 0: off
    answer_k: int = 3  # from each chunker's top this many chunks
    #: hand corrections of some manuals' tags ({doc_id: {"category", "model"}}), carried to the whole library by
    #: every chunker that can learn from them (`taught`: CHOP) before its chunks are indexed; None: none
    cnm_examples: Mapping[str, Mapping[str, str]] | None = None
    #: "chroma": Chroma's chunking evaluation beside ours (`core.evaluation.chroma`): every question also scored
    #: over as many chunks as hold its evidence, means per corpus, and paired tests on Chroma's metrics too
    protocol: str = "default"

    @property
    def chroma(self) -> bool:
        return self.protocol == "chroma"


def bench_dataset(dataset: QADataset, specs: Sequence[str], options: BenchOptions, services: Services,
                  progress: ProgressFn | None = None, prior: Mapping[str, IndexedRun] | None = None) -> BenchReport:
    """Every chunker in `specs` through the same pipeline and the same evaluation. `prior` holds runs the caller has
    just chunked and indexed over these same documents (the app's guided demo): they are scored as they are, not
    loaded from the caches a second time, and their chunk / embed / index seconds and LLM use are the caller's."""
    asked = AskedSet.of(dataset, options)
    data = asked.data
    context = services.context()
    embedder, store = services.embedder, services.store
    lexical = services.lexical if options.retrieval.uses_lexical else None
    results: dict[str, ChunkerReport] = {}
    for spec in specs:
        chunker = make_chunker(spec, context)
        model = ModelUse.start(services.get, chunker.needs)
        if prior is not None and spec in prior:
            indexed = prior[spec]
            run = indexed.run
            if isinstance(run.chunker, Chunker):  # the one that tagged the chunks tags the questions
                chunker = run.chunker
            if lexical is not None:
                indexed.lexical_from(lexical)
        else:
            run = chunk_documents(data.documents, chunker, services.workspace.chunk_runs, progress)
            if options.cnm_examples and (taught := getattr(chunker, "taught", None)) is not None:
                run = taught(run, data.documents, options.cnm_examples)
            indexed = index_run(run, data.documents, embedder, store, progress, lexical)
        memo_key = _memo_key(services, options, data.documents, data.questions, asked.queries, indexed,
                             [spec, chunker.spec])
        t0 = time.perf_counter()
        result = _memo_get(memo_key)
        from_memo = result is not None
        if result is None:
            scored = score_run(RunToScore(chunker, indexed, model, spec), asked, options, services)
            result, query_seconds = scored.result, scored.query_seconds
            _memo_put(memo_key, result)
        else:
            query_seconds = time.perf_counter() - t0
        results[spec] = result.with_run(
            seconds={"chunk": run.seconds, "embed": indexed.embed_seconds, "index": indexed.index_seconds,
                     "query": query_seconds, **({"lexical": indexed.lexical_seconds} if lexical is not None else {})},
            cached={"chunks": run.from_cache, "collection": indexed.reused,
                    **({"lexical": not indexed.lexical_built} if lexical is not None else {})},
            scores_cached=from_memo, vectors_computed=indexed.vectors_computed)
    has_spans = any(r.start < r.end for q in data.questions for r in q.references)
    headline = headline_metrics(options.ks, has_spans) + (chroma_headline(options.ks) if options.chroma else [])
    pairs = compare({spec: r.per_question for spec, r in results.items()}, headline)
    return BenchReport(
        dataset=data.name, embedder=embedder.describe(), n_documents=len(data.documents),
        n_questions=len(data.questions), k=list(options.ks),
        protocol=options.protocol if options.chroma else None, evidence_cap=EVIDENCE_CAP if options.chroma else None,
        qualify_queries=options.qualify_queries, joined=options.join, store=store.settings.describe(),
        retrieval=options.retrieval.describe(), peer_versions=peer_versions(), results=results,
        cnm_examples=sorted(options.cnm_examples) if options.cnm_examples else None,
        qids=[q.qid for q in data.questions], pairs=[pair.to_json() for pair in pairs])


@dataclass(frozen=True)
class AskedSet:
    """The question set as every chunker of a bench is asked it: the data set as scored (one stream when the bench
    joins), each question's query text (product-qualified or not) and its gold references by qid."""

    data: QADataset
    queries: list[str]
    refs: list[tuple[str, list[Span]]]

    @classmethod
    def of(cls, dataset: QADataset, options: BenchOptions) -> AskedSet:
        data = joined(dataset) if options.join else dataset
        return cls(data, [q.text(options.qualify_queries) for q in data.questions],
                   [(q.qid, list(q.references)) for q in data.questions])


@dataclass(frozen=True)
class RunToScore:
    """One chunker's indexed run, the model it asks (None: it asks none) and the spec it was asked for (its result's
    key in the report; the chunker's own spec when None)."""

    chunker: Chunker
    indexed: IndexedRun
    model: ModelUse | None = None
    spec: str | None = None


@dataclass(frozen=True)
class ScoredRun:
    """A run's result except what describes this particular run's cost (its seconds and caches), and the seconds
    its questions took."""

    result: ChunkerReport
    query_seconds: float


def score_run(target: RunToScore, asked: AskedSet, options: BenchOptions, services: Services) -> ScoredRun:
    """One chunk run asked every question of `asked` and scored: the one scorer of the bench, the app's Benchmark
    and the guided demo (all through `bench_dataset`)."""
    chunker, indexed, data, refs = target.chunker, target.indexed, asked.data, asked.refs
    run = indexed.run
    max_k = max(options.ks)
    source_of = source_resolver(data.documents)
    titles = document_titles(data.documents)  # what `retrieval=route` routes by (a joined stream has one)
    texts = {d.doc_id: d.text for d in data.documents}
    unread = unread_share(services.embedder, [c.embed_text for c in run.chunks])  # of the texts just indexed
    spans, parents, n_children = run.spans(), run.parents(), len(run.children())
    t0 = time.perf_counter()
    retriever = services.retriever(indexed, chunker.retrieval_policy(titles), options.retrieval, texts=texts)
    answers = retriever.ask_many(asked.queries, max(max_k, EVIDENCE_CAP) if options.chroma else max_k)
    hits = [a.hits for a in answers]
    query_seconds = time.perf_counter() - t0
    applied = Counter(a.tags.applied for a in answers if a.tags is not None)
    calls, tokens_in, tokens_out = target.model.since() if target.model else (0, 0, 0)
    retrieved = [[h.span for h in found] for found in hits]
    scores, by_question = evaluate(refs, retrieved, spans, options.ks, source_of)
    per_question = {m: [q.values[m] for q in by_question] for m in (by_question[0].values if by_question else {})}
    scores.update(_chroma_scores(refs, retrieved, spans, options.chroma, per_question))
    n = len(parents)
    generated = _answer_scores(options, services, data.questions, asked.queries, hits)
    fields: dict[str, object] = {  # read into the typed result as the report writes it, in the contract's order
        **scores,
        **with_intervals(per_question),
        "per_question": per_question,
        **({"per_corpus": corpus_means([corpus_of(r, source_of) for _, r in refs], per_question, with_intervals)}
           if options.chroma and refs else {}),
        "n_chunks": n,
        "n_children": n_children,
        "mean_chunk_tokens": sum(c.token_count for c in parents) / n if n else 0.0,
        "config": chunker.spec,
        "llm": getattr(target.model.service, "label", None) if target.model else None,
        "llm_calls": calls,
        "llm_tokens_in": tokens_in,
        "llm_tokens_out": tokens_out,
        "scorer": getattr(services.get("scorer"), "label", None) if "scorer" in chunker.needs else None,
        **report_fields(data.documents, run),
        "mean_parent_words": sum(T.count_words(c.text) for c in parents) / n if n else 0.0,
        "unread_share": unread,
        "top1_sources": top1_sources([q for q, _ in refs], [r for _, r in refs], retrieved, source_of),
        "retrieval_applied": dict(applied.most_common()),
        **_judged_depth(data.questions, retrieved, texts, options.ks),
        **generated,
    }
    return ScoredRun(ChunkerReport.from_json(target.spec or chunker.spec, fields), query_seconds)


def _chroma_scores(refs: Sequence[tuple[str, Sequence[Span]]], retrieved: Sequence[Sequence[Span]],
                   spans: Sequence[Span], chroma: bool, per_question: dict[str, list[float]]) -> dict[str, float]:
    """Chroma's Precision_Omega of every question of a set with gold spans (added to `per_question`, so it gets an
    interval like the others) and, under `--protocol chroma`, its `retrieve=-1` figures; returns their means and,
    for the span metrics, their standard deviations (numpy's, as Chroma reports them)."""
    if not any(r.start < r.end for _, rs in refs for r in rs):
        return {}
    index = EvidenceIndex(spans)
    rows = [evidence_scores(index, rs, got) if chroma else {"span_precision_omega": index.evidence(rs).precision_omega}
            for (_, rs), got in zip(refs, retrieved)]
    out: dict[str, float] = {}
    for metric in rows[0]:
        values = [row[metric] for row in rows]
        per_question[metric] = values
        out[metric] = float(np.mean(values))
        if metric.startswith("span_"):
            out[f"{metric}_std"] = float(np.std(values))
    return out


#: Scored runs of this process, by everything their scores depend on (`_memo_key`): asking the same questions of
#: the same collection with the same settings gives the same report, so a second guided demo (or benchmark) of
#: unchanged runs reads its scores instead of asking 448 questions again. In memory only: a new process (new code)
#: scores afresh. `scores_cached` in the report says which runs were read.
_MEMO: OrderedDict[str, ChunkerReport] = OrderedDict()
_MEMO_LOCK = threading.Lock()
MEMO_SIZE = 64


def with_intervals(per_question: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """`<metric>@<k>_ci95`: the 95 % bootstrap interval of each per-question metric (`core.evaluation.significance`)."""
    names = list(per_question)
    if not names:
        return {}
    bounds = intervals(np.array([per_question[m] for m in names], dtype=np.float64))
    return {f"{m}_ci95": [float(lo), float(hi)] for m, (lo, hi) in zip(names, bounds)}


def _memo_key(services: Services, options: BenchOptions, documents: Sequence[Document],
              questions: Sequence[Question], queries: Sequence[str], indexed: IndexedRun, specs: Sequence[str]) -> str:
    """Everything a run's scores depend on: the chunker as asked for (its spec: a retrieval policy such as
    `retrieval=filter` is not part of the run's identity), its collection (corpus, chunker identity with any hand
    edits, embedder), the documents as scored, the questions as asked and judged, the options and every setting
    (retrieval, reranker, LLM backends).

    The documents are keyed as the chunk runs are (`core.pipeline.corpus_fingerprint`: every `Document` field but
    those said to be unread), since the scores read more than the text: routing reads the titles and CHOP's CNM
    accuracy the gold tags. The questions are keyed by every field of `Question`, derived from the dataclass, so
    a field added later is keyed too. Keying what the scores read, rather than keeping only the ranked spans and
    computing the figures again on a replay, keeps the memo what it is for (a replay does no work, the bootstrap
    intervals included) and keeps `score_run` one function; the cost is that the key must name every input,
    which the two derived digests do."""
    asked = [[query, {f.name: getattr(q, f.name) for f in dataclasses.fields(Question)}]
             for q, query in zip(questions, queries)]
    parts = [*specs, indexed.collection, indexed.run.identity, _chunks_digest(indexed), corpus_fingerprint(documents),
             services.settings.model_dump_json(),
             json.dumps([list(options.ks), options.qualify_queries, options.join, options.retrieval.describe(),
                         options.answers, options.answer_k, options.cnm_examples,
                         *([options.protocol] if options.chroma else [])], default=str, sort_keys=True),
             json.dumps(asked, default=str, sort_keys=True)]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _chunks_digest(indexed: IndexedRun) -> str:
    """The run's chunks, as what was indexed: their spans and the texts that were embedded."""
    h = hashlib.sha256()
    for c in indexed.run.chunks:
        h.update(f"{c.doc_id}\x00{c.start}\x00{c.end}\x00{c.embed_text}\x00".encode())
    return h.hexdigest()


def _memo_get(key: str) -> ChunkerReport | None:
    with _MEMO_LOCK:
        if key not in _MEMO:
            return None
        _MEMO.move_to_end(key)
        return copy.deepcopy(_MEMO[key])


def _memo_put(key: str, scored: ChunkerReport) -> None:
    if scored.answer_f1 is not None:  # a chat model's answers are not kept: asking again is the point
        return
    with _MEMO_LOCK:
        _MEMO[key] = copy.deepcopy(scored)
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)


def _judged_depth(questions: Sequence[Question], retrieved: Sequence[Sequence[Span]], texts: Mapping[str, str],
                  ks: Sequence[int]) -> dict[str, float]:
    """For questions judged by hand (core.ingest.judged: they carry `not_relevant`), the pool depth: the mean
    share of the top k hits their judgments cover (`judged@k`), so an unjudged hit is not taken for a miss. Nothing
    for a set without judged questions."""
    picked = [i for i, q in enumerate(questions) if "not_relevant" in q.extra]
    if not picked:
        return {}
    out: dict[str, float] = {"judged_questions": len(picked)}
    for k in ks:
        depths = [pool_depth(retrieved[i], questions[i], texts, k) for i in picked]
        out[f"judged@{k}"] = sum(d.judged / d.shown for d in depths if d.shown) / len(picked)
    return out


def _answer_scores(options: BenchOptions, services: Services, questions: Sequence[Question], queries: Sequence[str],
                   hits: Sequence[Sequence[Hit]]) -> dict[str, float]:
    """Token F1 and ROUGE-L of the chat model's answers from this chunker's top `answer_k`, over the first
    `answers` questions that have a reference answer (nothing when generation is off)."""
    chat = services.chat
    if not options.answers or chat is None:
        return {}
    from core.evaluation.generation import answer_request, score_answer

    picked = [i for i, q in enumerate(questions) if q.answer][: options.answers]
    used = ModelUse.of(chat)
    t0 = time.perf_counter()
    answers = chat.ask_many([answer_request(queries[i], [h.chunk for h in hits[i][: options.answer_k]])
                             for i in picked])
    scored = [score_answer(a, questions[i].answer) for i, a in zip(picked, answers)]
    calls, tokens_in, tokens_out = used.since()
    n = len(scored) or 1
    return {"answer_f1": sum(s.f1 for s in scored if s) / n, "answer_rouge_l": sum(s.rouge_l for s in scored if s) / n,
            "answers_scored": len(scored), "answer_errors": sum(1 for a in answers if a.error),
            "answer_calls": calls, "answer_tokens_in": tokens_in, "answer_tokens_out": tokens_out,
            "answer_seconds": time.perf_counter() - t0, "answer_k": options.answer_k}


def format_table(report: BenchReport) -> str:
    """A plain-text table of the headline metrics, one row per chunker."""
    chroma = report.protocol == "chroma"  # Chroma's four figures, and its retrieve=-1 three
    spans = ("span_recall", "span_precision", "span_iou") if chroma else ("span_recall", "span_iou")
    cols = [f"{m}@{k}" for k in report.ks for m in ("hit", "mrr", "ndcg", *spans, "wrong_doc")]
    cols += ["span_precision_omega", *EVIDENCE_KEYS] if chroma else []
    results = report.results
    methods = [show.key for show in shown_fields() if show.command_line and show.place != "fidelity"]
    fidelity = [show.key for show in shown_fields("fidelity") if show.command_line]
    extra = [c for c in ("llm_calls", *methods, "answer_f1", "answer_rouge_l", *fidelity)
             if any(r.get(c) for r in results.values())]
    header = ["chunker", "chunks", "tokens", *cols, *extra, "chunk s", "embed s", "index s", "query s"]
    rows = []
    for name, r in results.items():
        s = r.seconds
        rows.append([name, str(r.n_chunks), f"{r.mean_chunk_tokens:.0f}",
                     *[metric_cell(r, c) if c.startswith(("hit", "mrr")) else _number_cell(r.get(c), ".3f")
                       for c in cols],
                     *[_number_cell(r.get(c), ".3g") for c in extra],
                     f"{s['chunk']:.1f}", f"{s['embed']:.1f}", f"{s['index']:.1f}", f"{s['query']:.2f}"])
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    lines = [f"{report.dataset}: {report.n_questions} questions, {report.n_documents} documents, "
             f"embedder {report.embedder}, retrieval {retrieval_phrase(report)}"
             + (", product-qualified queries" if report.qualify_queries else "")]
    for row in [header, *rows]:
        lines.append("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
    for name, r in results.items():  # what a retrieval policy did with the questions, said plainly
        if r.retrieval_applied:
            lines.append(f"{name}: " + ", ".join(f"{what} {n}" for what, n in r.retrieval_applied.items()))
    lines += [line.replace("`", "") for line in pair_lines(report)]
    return "\n".join(lines)


def _number_cell(value: object, spec: str) -> str:
    return "-" if value is None else format(value, spec)
