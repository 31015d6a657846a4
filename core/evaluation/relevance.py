"""Scoring retrieved chunks against gold spans, the same way for every chunker.

Evaluation only sees spans: what a chunker did, and how retrieval ranked its chunks, reach it as
(doc_id, start, end) lists. That keeps the comparison fair across methods.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.evaluation import metrics as M
from core.evaluation.results import Metric
from core.schema.documents import Document
from core.schema.spans import Span

SourceOf = Callable[[Span], str]  # which source document a span comes from (a joined stream's segment)


def same_document(span: Span) -> str:
    return span.doc_id


def source_resolver(documents: Sequence[Document]) -> SourceOf:
    """Spans of a joined stream belong to the segment holding their midpoint; other spans to their document."""
    segments = {d.doc_id: d.segments for d in documents if d.segments}
    if not segments:
        return same_document
    starts = {doc_id: [s.start for s in segs] for doc_id, segs in segments.items()}

    def source(span: Span) -> str:
        segs = segments.get(span.doc_id)
        if not segs:
            return span.doc_id
        i = bisect.bisect_right(starts[span.doc_id], (span.start + span.end) // 2) - 1
        return segs[max(i, 0)].doc_id

    return source


class RelevanceCounter:
    """How many chunks of an index are relevant to a question's references (the ideal for NDCG)."""

    def __init__(self, index_spans: Sequence[Span]) -> None:
        self._by_doc: dict[str, list[Span]] = defaultdict(list)
        for s in index_spans:
            self._by_doc[s.doc_id].append(s)

    def count(self, refs: Sequence[Span]) -> int:
        docs = {r.doc_id for r in refs}
        return sum(1 for d in docs for c in self._by_doc.get(d, ()) if any(M.is_relevant(c, r) for r in refs))


@dataclass
class QuestionScore:
    """One question's judgements at every k asked (the app shows these per query)."""

    qid: str
    relevant: list[bool]
    n_relevant: int
    values: dict[str, float]

    def at(self, metric: Metric, k: int) -> float | None:
        """The metric at cut-off k for this question ("hit@5"), None when it was not scored at k."""
        return self.values.get(f"{metric}@{k}")


def score_question(qid: str, retrieved: Sequence[Span], refs: Sequence[Span], n_relevant: int,
                   ks: Sequence[int], source_of: SourceOf = same_document) -> QuestionScore:
    rel = M.relevance(retrieved, refs)
    got_docs = [source_of(s) for s in retrieved]
    gold_docs = {source_of(r) for r in refs}
    values: dict[str, float] = {}
    for k in ks:
        spans = M.span_scores(retrieved[:k], refs)
        values.update({
            f"hit@{k}": M.hit_at_k(rel, k),
            f"mrr@{k}": M.mrr_at_k(rel, k),
            f"ndcg@{k}": M.ndcg_at_k(rel, k, n_relevant),
            f"dcg@{k}": M.dcg_at_k(rel, k),
            f"recall@{k}": M.recall_at_k(retrieved, refs, k),
            f"span_recall@{k}": spans.recall,
            f"span_precision@{k}": spans.precision,
            f"span_iou@{k}": spans.iou,
            f"wrong_doc@{k}": M.wrong_doc_at_k(got_docs, gold_docs, k),
        })
    return QuestionScore(qid, rel, n_relevant, values)


SPAN_KEYS = ("span_recall", "span_precision", "span_iou")


def aggregate(scores: Sequence[QuestionScore], ks: Sequence[int]) -> dict[str, float]:
    """Means over questions; span metrics also get their standard deviation (`span_iou_std@k`)."""
    if not scores:
        return {}
    keys = list(scores[0].values)
    table = np.array([[s.values[k] for k in keys] for s in scores], dtype=np.float64)
    out = {k: float(v) for k, v in zip(keys, table.mean(axis=0))}
    for k in ks:
        for base in SPAN_KEYS:
            col = keys.index(f"{base}@{k}")
            out[f"{base}_std@{k}"] = float(table[:, col].std())
    return out


def evaluate(questions_refs: Sequence[tuple[str, Sequence[Span]]], retrieved: Sequence[Sequence[Span]],
             index_spans: Sequence[Span], ks: Sequence[int],
             source_of: SourceOf = same_document) -> tuple[dict[str, float], list[QuestionScore]]:
    """Score every question's ranked spans; returns the aggregate and the per-question scores."""
    counter = RelevanceCounter(index_spans)
    scores = [
        score_question(qid, got, refs, counter.count(refs), ks, source_of)
        for (qid, refs), got in zip(questions_refs, retrieved)
    ]
    return aggregate(scores, ks), scores
