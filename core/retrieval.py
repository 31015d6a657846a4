"""Top-k retrieval over an indexed chunk run: embed the question, ask the store, map ids back to chunks.

CNM-aware retrieval (beyond the CHOP paper, which only prefixes): the question's own CNM is extracted with the
same backend, then either
- "filter": only chunks whose CNM model matches the question's model are searched (Chroma `where` filter;
  questions without a model, or with a model no chunk carries, are searched unfiltered), or
- "boost": a wider pool is fetched and each chunk's cosine score is raised by `boost` for a model match
  (half of it for a category match only), then re-ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.chunkers.base import Chunk
from core.embeddings import Embedder
from core.index import VectorStore
from core.llm.rules import models_match


@dataclass
class Hit:
    chunk: Chunk
    score: float
    rank: int
    similarity: float = 0.0  # the plain cosine similarity, before any CNM boost
    cnm_match: float | None = None
    children: list[tuple[Chunk, float]] = field(default_factory=list)  # multi-granular: the child hits behind it


@dataclass
class CnmPolicy:
    mode: str  # "off" | "boost" | "filter"
    backend: Any  # anything with .extract(texts) -> [CnmResult] (core.llm.cnm.PromptedCnm, core.llm.rules.RuleCnm)
    boost: float = 0.1
    pool: int = 50


@dataclass
class QueryCnm:
    cnm: dict[str, Any]
    applied: str = "none"  # what was done for this question: "filter", "boost", "none (no model)", ...
    models: list[str] = field(default_factory=list)


def cnm_policy_for(chunker: Any, backend: Any) -> CnmPolicy | None:
    """The CNM-aware search a chunker's spec asks for (`chop:retrieval=filter|boost`), or None."""
    mode = getattr(chunker, "retrieval", "off")
    return CnmPolicy(mode, backend, getattr(chunker, "boost", 0.1)) if mode != "off" else None


def cnm_match(question: dict[str, Any], chunk: dict[str, Any]) -> float:
    """1 for the same model, 0.5 for the same category only, 0 otherwise."""
    if models_match(question.get("model"), chunk.get("model")):
        return 1.0
    qc, cc = question.get("category"), chunk.get("category")
    return 0.5 if qc and cc and qc.lower() == cc.lower() else 0.0


def parents_by_best_child(found: Sequence[tuple[str, float]], by_id: dict[str, Chunk], k: int) -> list[Hit]:
    """Multi-granular retrieval: a parent's score is the maximum of its children's; top-k distinct parents."""
    best: dict[str, Hit] = {}
    for cid, score in found:
        child = by_id[cid]
        parent_id = child.parent_id or cid
        hit = best.get(parent_id)
        if hit is None:
            hit = best[parent_id] = Hit(by_id[parent_id], score, 0, score)
        hit.children.append((child, score))
        if score > hit.score:
            hit.score = hit.similarity = score
    ranked = sorted(best.values(), key=lambda h: -h.score)[:k]
    for rank, hit in enumerate(ranked, start=1):
        hit.rank = rank
    return ranked


class Retriever:
    def __init__(self, store: VectorStore, collection: str, chunks: Sequence[Chunk], embedder: Embedder,
                 cnm: CnmPolicy | None = None) -> None:
        self.store = store
        self.collection = collection
        self.by_id = {c.chunk_id: c for c in chunks}
        self.embedder = embedder
        self.cnm = cnm if cnm and cnm.mode != "off" else None
        self.has_children = any(c.parent_id for c in chunks)
        self.chunk_models = sorted({m for c in chunks if (m := (c.meta.get("cnm") or {}).get("model"))})
        self.last_query_cnms: list[QueryCnm] = []

    def _hits(self, found: list[tuple[str, float]]) -> list[Hit]:
        return [Hit(self.by_id[cid], score, rank, score) for rank, (cid, score) in enumerate(found, start=1)]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        return self.search_vectors(queries, self.embedder.embed(list(queries)), k)

    def search_vectors(self, queries: Sequence[str], vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """`search_many` with the queries' vectors already made by this retriever's embedder, so a caller asking
        several retrievers the same question embeds it once (the texts are still needed for CNM extraction)."""
        if not queries:
            return []
        if self.has_children:
            pool = max(50, 10 * k)
            return [parents_by_best_child(found, self.by_id, k) for found in
                    self.store.query(self.collection, vectors, pool)]
        if self.cnm is None:
            return [self._hits(found) for found in self.store.query(self.collection, vectors, k)]
        q_cnms = [r.cnm.model_dump() for r in self.cnm.backend.extract(list(queries))]
        self.last_query_cnms = []
        results = []
        for vec, qc in zip(vectors, q_cnms):
            if self.cnm.mode == "filter":
                results.append(self._filtered(vec, qc, k))
            else:
                results.append(self._boosted(vec, qc, k))
        return results

    def _filtered(self, vector, qc: dict[str, Any], k: int) -> list[Hit]:
        models = [m for m in self.chunk_models if models_match(qc.get("model"), m)]
        if not models:
            self.last_query_cnms.append(QueryCnm(qc, "none (no model)" if not qc.get("model") else "none (no match)"))
            return self._hits(self.store.query(self.collection, vector[None, :], k)[0])
        self.last_query_cnms.append(QueryCnm(qc, "filter", models))
        found = self.store.query(self.collection, vector[None, :], k, where={"cnm_model": {"$in": models}})[0]
        hits = self._hits(found)
        for h in hits:
            h.cnm_match = 1.0
        return hits

    def _boosted(self, vector, qc: dict[str, Any], k: int) -> list[Hit]:
        assert self.cnm is not None
        pool = self.store.query(self.collection, vector[None, :], max(k, self.cnm.pool))[0]
        scored = []
        for cid, sim in pool:
            chunk = self.by_id[cid]
            match = cnm_match(qc, chunk.meta.get("cnm") or {})
            scored.append((sim + self.cnm.boost * match, sim, match, chunk))
        scored.sort(key=lambda t: -t[0])
        self.last_query_cnms.append(QueryCnm(qc, "boost"))
        return [Hit(chunk, score, rank, sim, match) for rank, (score, sim, match, chunk) in
                enumerate(scored[:k], start=1)]

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]
