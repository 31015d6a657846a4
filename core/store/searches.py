"""The base retrievers: dense (Chroma), lexical (BM25) and the two fused. Each ranks the indexed units of one run
for a batch of probes and says how deep it looks for a top k; the wrappers (`core.store.hits`' unit and parent
rankings, `core.store.policy_search`, the reranker, `core.store.explain`) work on any of them alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from core.store.fusion import Candidate, fuse_rrf, fuse_weighted
from core.store.index import VectorStore
from core.store.lexical import LexicalIndex

if TYPE_CHECKING:
    from chromadb.api.types import Where


@dataclass(frozen=True)
class Probe:
    """One question as a base retriever reads it: the text BM25 scores, the vector Chroma compares, and what a
    policy's filter left searchable (a Chroma `where` and a mask over the lexical index; None: everything)."""

    text: str
    vector: np.ndarray
    where: Where | None = None
    mask: np.ndarray | None = None


class BaseSearch(Protocol):
    #: whether its scores must be min-max normalised before a boost is added (cosines need not be)
    normalised_for_boost: bool

    def depth(self, k: int) -> int:
        """How many candidates it ranks for a top k."""
        ...

    def candidates(self, probes: Sequence[Probe], n: int) -> list[list[Candidate]]: ...


class DenseSearch:
    """Chroma's nearest units by cosine, exactly k deep (the original behaviour)."""

    normalised_for_boost = False

    def __init__(self, store: VectorStore, collection: str) -> None:
        self.store, self.collection = store, collection

    def depth(self, k: int) -> int:
        return k

    def ranked(self, probe: Probe, n: int) -> list[tuple[str, float]]:
        """(unit id, cosine), best first, among the units the probe may see."""
        return self.store.query(self.collection, probe.vector[None, :], n, where=probe.where)[0]

    def candidates(self, probes: Sequence[Probe], n: int) -> list[list[Candidate]]:
        if all(p.where is None for p in probes):  # one batched query
            found = self.store.query(self.collection, np.stack([p.vector for p in probes]), n)
        else:
            found = [self.ranked(p, n) for p in probes]
        return [[Candidate(cid, s, rank, s) for rank, (cid, s) in enumerate(one, start=1)] for one in found]


class LexicalSearch:
    """BM25 over the text the units were embedded with, `pool` (or 10 * k) deep."""

    normalised_for_boost = True

    def __init__(self, index: LexicalIndex, pool: int) -> None:
        self.index, self.pool = index, pool

    def depth(self, k: int) -> int:
        return max(self.pool, 10 * k)

    def ranked(self, probe: Probe, n: int) -> list[tuple[str, float]]:
        return self.index.search(probe.text, n, probe.mask)

    def candidates(self, probes: Sequence[Probe], n: int) -> list[list[Candidate]]:
        return [[Candidate(cid, s, lexical_rank=rank, lexical_score=s)
                 for rank, (cid, s) in enumerate(self.ranked(p, n), start=1)] for p in probes]


class FusedSearch:
    """Both lists, each as deep as the lexical side looks, fused by RRF or by weighted normalised scores."""

    normalised_for_boost = True

    def __init__(self, dense: DenseSearch, lexical: LexicalSearch, fusion: str, lexical_weight: float,
                 rrf_k: int) -> None:
        self.dense, self.lexical = dense, lexical
        self.fusion, self.lexical_weight, self.rrf_k = fusion, lexical_weight, rrf_k

    def depth(self, k: int) -> int:
        return self.lexical.depth(k)

    def candidates(self, probes: Sequence[Probe], n: int) -> list[list[Candidate]]:
        out = []
        for p in probes:
            lexical = self.lexical.ranked(p, n)
            dense = self.dense.ranked(p, n)
            out.append(fuse_rrf(dense, lexical, self.lexical_weight, self.rrf_k) if self.fusion == "rrf"
                       else fuse_weighted(dense, lexical, self.lexical_weight))
        return out
