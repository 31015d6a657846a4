"""Hits, and the two ways a ranking of indexed units becomes hits: each unit a hit of its own (`Units`), or, in a
multi-granular run whose children are indexed, each parent scored by its best child (`ParentMerge`: parent and
child are data on the chunks, the merge is a wrapper over any base retriever)."""

from __future__ import annotations

from collections.abc import Sequence

from core.schema.chunks import Chunk
from core.schema.hits import Hit
from core.store.fusion import Candidate
from core.store.searches import BaseSearch, Probe


def take_sides(hit: Hit, c: Candidate) -> None:
    """Where the unit behind `hit` stood on the dense and the lexical side."""
    hit.dense_rank, hit.dense_score, hit.lexical_rank, hit.lexical_score = (
        c.dense_rank, c.dense_score, c.lexical_rank, c.lexical_score)
    hit.similarity = c.dense_score or 0.0


def parents_by_best_child(found: Sequence[tuple[str, float]], by_id: dict[str, Chunk], k: int) -> list[Hit]:
    """Multi-granular retrieval: a parent's score is the maximum of its children's; top-k distinct parents."""
    best: dict[str, Hit] = {}
    for cid, score in found:
        child = by_id[cid]
        parent_id = child.parent_id or cid
        hit = best.get(parent_id)
        if hit is None:
            hit = best[parent_id] = Hit(by_id[parent_id], score, 0, score, unit_id=cid)
        hit.children.append((child, score))
        if score > hit.score:
            hit.score = hit.similarity = score
            hit.unit_id = cid
    ranked = sorted(best.values(), key=lambda h: -h.score)[:k]
    for rank, hit in enumerate(ranked, start=1):
        hit.rank = rank
    return ranked


class Units:
    """Every ranked unit is a hit."""

    def __init__(self, base: BaseSearch, by_id: dict[str, Chunk]) -> None:
        self.base, self.by_id = base, by_id

    def depth(self, k: int) -> int:
        return self.base.depth(k)

    def hits(self, probes: Sequence[Probe], k: int | None, n: int) -> list[list[Hit]]:
        """The top k hits (None: all of them) of each probe, from a ranking `n` deep."""
        out = []
        for cands in self.base.candidates(probes, n):
            hits = []
            for rank, c in enumerate(cands[:k], start=1):
                hit = Hit(self.by_id[c.cid], c.score, rank, unit_id=c.cid)
                take_sides(hit, c)
                hits.append(hit)
            out.append(hits)
        return out


class ParentMerge:
    """Children are ranked; each parent scores as its best child. The ranking looks at least 10 children deep per
    parent asked for, and `floor` deep (dense search asks for 50)."""

    def __init__(self, base: BaseSearch, by_id: dict[str, Chunk], floor: int = 0) -> None:
        self.base, self.by_id, self.floor = base, by_id, floor

    def depth(self, k: int) -> int:
        return max(self.base.depth(k), 10 * k, self.floor)

    def hits(self, probes: Sequence[Probe], k: int | None, n: int) -> list[list[Hit]]:
        out = []
        for cands in self.base.candidates(probes, n):
            by_cid = {c.cid: c for c in cands}
            hits = parents_by_best_child([(c.cid, c.score) for c in cands], self.by_id,
                                         len(cands) if k is None else k)
            for hit in hits:
                take_sides(hit, by_cid[hit.unit_id])
            out.append(hits)
        return out
