"""Retrieval metrics over character spans, as METHODS.md defines them. Pure functions, no I/O.

A retrieved chunk is *relevant* to a gold reference when both are in the same document and they overlap by at
least half of the shorter of the two. Rank metrics use those binary judgements; span metrics follow Chroma's
chunking evaluation (brandonstarxel/chunking_evaluation, base_evaluation.py) and measure characters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from core.schema.spans import Interval, Span, overlap, subtract, total, union


def is_relevant(chunk: Span, ref: Span) -> bool:
    shorter = min(chunk.end - chunk.start, ref.end - ref.start)
    return shorter > 0 and overlap(chunk, ref) * 2 >= shorter


def relevance(retrieved: Sequence[Span], refs: Sequence[Span]) -> list[bool]:
    """For each retrieved chunk, whether it is relevant to any reference."""
    return [any(is_relevant(c, r) for r in refs) for c in retrieved]


def hit_at_k(rel: Sequence[bool], k: int) -> float:
    return 1.0 if any(rel[:k]) else 0.0


def mrr_at_k(rel: Sequence[bool], k: int) -> float:
    for rank, r in enumerate(rel[:k], start=1):
        if r:
            return 1.0 / rank
    return 0.0


def dcg_at_k(rel: Sequence[bool], k: int) -> float:
    """Binary-gain DCG with log2 discount: sum of 1/log2(rank+1) over relevant ranks (LumberChunker's report)."""
    return sum(1.0 / math.log2(rank + 1) for rank, r in enumerate(rel[:k], start=1) if r)


def ndcg_at_k(rel: Sequence[bool], k: int, n_relevant: int) -> float:
    """DCG over the ideal DCG, the ideal being every relevant chunk in the index ranked first (capped at k)."""
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, n_relevant) + 1))
    return dcg_at_k(rel, k) / ideal if ideal > 0 else 0.0


def recall_at_k(retrieved: Sequence[Span], refs: Sequence[Span], k: int) -> float:
    """Chunk-level recall: share of references with at least one relevant chunk in the top k."""
    if not refs:
        return 0.0
    top = retrieved[:k]
    return sum(1 for r in refs if any(is_relevant(c, r) for c in top)) / len(refs)


class SpanScores(NamedTuple):
    recall: float
    precision: float
    iou: float


def span_scores(retrieved: Sequence[Span], refs: Sequence[Span]) -> SpanScores:
    """Chroma's token-free span metrics over the retrieved chunks.

    numerator = characters of the references covered by the retrieved chunks of the question's own document
    (each character once); recall = numerator / reference characters; precision = numerator / sum of retrieved
    chunk lengths (overlapping chunks count twice, as in Chroma's code); IoU = numerator / (that sum + reference
    characters no chunk covered).
    """
    covered: list[Interval] = []
    unused = [(r.start, r.end) for r in refs]
    for c in retrieved:
        for r in refs:
            if c.doc_id != r.doc_id:
                continue
            s, e = max(c.start, r.start), min(c.end, r.end)
            if e > s:
                covered = union([*covered, (s, e)])
                unused = subtract(unused, (s, e))
    numerator = total(covered)
    ref_chars = total((r.start, r.end) for r in refs)
    retrieved_chars = total((c.start, c.end) for c in retrieved)
    return SpanScores(
        recall=numerator / ref_chars if ref_chars else 0.0,
        precision=numerator / retrieved_chars if retrieved_chars else 0.0,
        iou=numerator / (retrieved_chars + total(unused)) if retrieved_chars + total(unused) else 0.0,
    )


def wrong_doc_at_k(retrieved_docs: Sequence[str], gold_docs: Iterable[str], k: int) -> float:
    """Collisions: the share of the top-k hits that come from a document holding none of the question's gold
    references (the failure CHOP targets). Over the hits actually returned, at most k; 0.0 when there are none."""
    top = retrieved_docs[:k]
    if not top:
        return 0.0
    gold = set(gold_docs)
    return sum(1 for d in top if d not in gold) / len(top)
