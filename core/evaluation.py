"""Scoring retrieved chunks against gold spans, the same way for every chunker.

Evaluation only sees spans: what a chunker did, and how retrieval ranked its chunks, reach it as
(doc_id, start, end) lists. That keeps the comparison fair across methods.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core import metrics as M
from core.metrics import Span


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


def score_question(qid: str, retrieved: Sequence[Span], refs: Sequence[Span], n_relevant: int,
                   ks: Sequence[int]) -> QuestionScore:
    rel = M.relevance(retrieved, refs)
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
             index_spans: Sequence[Span], ks: Sequence[int]) -> tuple[dict[str, float], list[QuestionScore]]:
    """Score every question's ranked spans; returns the aggregate and the per-question scores."""
    counter = RelevanceCounter(index_spans)
    scores = [
        score_question(qid, got, refs, counter.count(refs), ks)
        for (qid, refs), got in zip(questions_refs, retrieved)
    ]
    return aggregate(scores, ks), scores
