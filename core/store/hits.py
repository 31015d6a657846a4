"""Hits, and the two ways a ranking of indexed units becomes hits: each unit a hit of its own (`Units`), or, in a
multi-granular run whose children are indexed, each parent scored by its best child (`ParentMerge`: parent and
child are data on the chunks, the merge is a wrapper over any base retriever)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.model import Chunk
from core.store.fusion import Candidate
from core.store.searches import BaseSearch, Probe


@dataclass
class Hit:
    chunk: Chunk
    score: float
    rank: int
    similarity: float = 0.0  # the plain cosine similarity (0 when the dense side did not rank it), before a boost
    tag_match: float | None = None  # the retrieval policy's match of the question with this chunk
    children: list[tuple[Chunk, float]] = field(default_factory=list)  # multi-granular: the child hits behind it
    unit_id: str = ""  # the indexed unit behind the score: the chunk itself, or a parent's best child
    dense_rank: int | None = None  # 1-based, among the searched chunks; None: beyond the candidate pool
    dense_score: float | None = None  # cosine similarity
    lexical_rank: int | None = None  # 1-based; None: no query token occurs in the chunk
    lexical_score: float | None = None  # BM25
    first_rank: int | None = None  # with a reranker: the rank before it re-ordered the hits
    rerank_score: float | None = None  # with a reranker: its score

    def take_sides(self, c: Candidate) -> None:
        """Where the unit behind this hit stood on the dense and the lexical side."""
        self.dense_rank, self.dense_score, self.lexical_rank, self.lexical_score = (
            c.dense_rank, c.dense_score, c.lexical_rank, c.lexical_score)
        self.similarity = c.dense_score or 0.0


@dataclass
class QueryTags:
    """A question's tags and what the retrieval policy did with them."""

    tags: dict[str, Any]
    applied: str = "none"  # "filter", "boost", "route", "none (no model)", "none (no title named)", ...
    values: list[str] = field(default_factory=list)  # the chunk values a filter kept
    label: str = "question CNM"  # the policy's name for them (`RetrievalPolicy.label`)


@dataclass
class Answer:
    """One question's hits, with its tags when the run has a retrieval policy."""

    hits: list[Hit]
    tags: QueryTags | None = None


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
                hit.take_sides(c)
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
                hit.take_sides(by_cid[hit.unit_id])
            out.append(hits)
        return out
