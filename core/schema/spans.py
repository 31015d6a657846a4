"""Character spans of documents and the arithmetic on them: what gold evidence, retrieved chunks and judged text
are measured in. A leaf: it imports nothing of `core`, so chunks, questions, hits, the pipeline and the metrics
share it without reaching each other. `Interval` is an offset range within one text (what chunkers cut)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Span(NamedTuple):
    doc_id: str
    start: int
    end: int


Interval = tuple[int, int]


def overlap(a: Span, b: Span) -> int:
    if a.doc_id != b.doc_id:
        return 0
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def union(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def total(intervals: Iterable[Interval]) -> int:
    return sum(e - s for s, e in intervals)


def subtract(intervals: Iterable[Interval], cut: Interval) -> list[Interval]:
    out: list[Interval] = []
    for s, e in intervals:
        if e <= cut[0] or s >= cut[1]:
            out.append((s, e))
            continue
        if s < cut[0]:
            out.append((s, cut[0]))
        if e > cut[1]:
            out.append((cut[1], e))
    return out
