"""Candidates with where they stood on each side, and the two ways of fusing a dense and a lexical list.

Hybrid search fuses two ranked lists `pool` deep: by reciprocal rank (RRF: (1 - w) / (60 + rank_d) +
w / (60 + rank_l)) or by a weighted sum of min-max normalised scores ((1 - w) * dense + w * lexical, a unit missing
from one list scoring 0 there). Ties are broken by dense rank, then lexical rank, so the same lists always give
the same order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Candidate:
    """One indexed unit (a chunk, or a multi-granular child) in a ranking, with where it stood on each side."""

    cid: str
    score: float
    dense_rank: int | None = None
    dense_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None


def minmax(values: Sequence[float]) -> list[float]:
    """Scale to [0, 1] over the list (all 1.0 when every value is equal)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


def _sides(dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]]) -> dict[str, Candidate]:
    out: dict[str, Candidate] = {}
    for rank, (cid, s) in enumerate(dense, start=1):
        out[cid] = Candidate(cid, 0.0, rank, s)
    for rank, (cid, s) in enumerate(lexical, start=1):
        c = out.setdefault(cid, Candidate(cid, 0.0))
        c.lexical_rank, c.lexical_score = rank, s
    return out


def _ranked(cands: dict[str, Candidate]) -> list[Candidate]:
    big = 1 << 30
    return sorted(cands.values(), key=lambda c: (-c.score, c.dense_rank or big, c.lexical_rank or big))


def fuse_rrf(dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]], lexical_weight: float,
             rrf_k: int = 60) -> list[Candidate]:
    """Weighted reciprocal-rank fusion: (1 - w) / (k + dense rank) + w / (k + lexical rank)."""
    cands = _sides(dense, lexical)
    for c in cands.values():
        if c.dense_rank is not None:
            c.score += (1.0 - lexical_weight) / (rrf_k + c.dense_rank)
        if c.lexical_rank is not None:
            c.score += lexical_weight / (rrf_k + c.lexical_rank)
    return _ranked(cands)


def fuse_weighted(dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]],
                  lexical_weight: float) -> list[Candidate]:
    """(1 - w) * min-max(cosine) + w * min-max(BM25), each normalised over its own candidate list."""
    cands = _sides(dense, lexical)
    for (cid, _), v in zip(dense, minmax([s for _, s in dense])):
        cands[cid].score += (1.0 - lexical_weight) * v
    for (cid, _), v in zip(lexical, minmax([s for _, s in lexical])):
        cands[cid].score += lexical_weight * v
    return _ranked(cands)
