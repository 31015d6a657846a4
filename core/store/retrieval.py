"""Top-k retrieval over an indexed chunk run: dense (Chroma), lexical (BM25) or both fused; a method's tag-aware
search on top.

Retrieval modes, one for every chunker of a comparison so that it stays fair (`RetrievalSettings`):
- "dense": embed the question, ask Chroma for the nearest chunks by cosine (the original behaviour, unchanged).
- "bm25": BM25 over the same text the chunks were embedded with (`core.store.lexical`).
- "hybrid": both candidate lists, `pool` deep, fused either by reciprocal rank (RRF: w_d / (60 + rank_d) +
  w_l / (60 + rank_l)) or by a weighted sum of min-max normalised scores ((1 - w) * dense + w * lexical, a chunk
  missing from one list scoring 0 there). w is `lexical_weight` in both.

A chunker may bring a `RetrievalPolicy` (`Chunker.retrieval_policy`; CHOP's CNM filter and boost are one, in
`core.methods.chop.policy`; title routing, `retrieval=route`, another, in `core.store.routing`). It composes with
every mode. The policy tags each question, then either
- "filter": only chunks whose stored tag the question's tags keep are searched, on both sides (a Chroma `where`
  filter on the policy's store field and a mask over the BM25 scores; a question the policy keeps nothing for
  is searched unfiltered). BM25 then reads the policy's `residual_query`: the question without the words the
  filter has matched (every chunk left names the model, so those words would only favour the chunks that
  repeat it); or
- "boost": a wider pool is ranked and each chunk's score is raised by `boost` times the policy's match (0 to 1).
  Dense scores are cosines; fused and BM25 scores are first min-max normalised over the pool, so the same boost
  means the same on every scale.

Multi-granular runs (children indexed) score a parent by its best child, in every mode; a filter keeps the children
of the chunks it keeps (a boost needs a hybrid or BM25 mode there).
A reranker (`core.store.rerank`, `RetrievalSettings.rerank`) then re-orders the top `rerank_depth` hits of any
mode and policy before the top k are kept.
With `explain`, every hit also carries its dense rank and cosine and its lexical rank and BM25 score, whatever
the mode (the app shows them side by side).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.errors import ConfigError
from core.model import Chunk, RetrievalPolicy
from core.store.embeddings import Embedder
from core.store.index import VectorStore
from core.store.lexical import TOKENIZER_VERSION, LexicalIndex
from core.store.rerank import DEFAULT_WEIGHTS, RERANKERS, Reranker, rerank_order

MODES = ("dense", "bm25", "hybrid")
FUSIONS = ("rrf", "weighted")


@dataclass(frozen=True)
class RetrievalSettings:
    """How every chunker of a comparison is searched. This class defaults to plain dense search; the app's and the
    command line's defaults (hybrid, RRF, lexical weight 0.9) live in `core.settings.Settings`, chosen by
    measurement across the shared sets (docs/RETRIEVAL.md)."""

    mode: str = "dense"
    fusion: str = "rrf"
    lexical_weight: float = 0.9
    rrf_k: int = 60
    pool: int = 100  # candidates taken from each side before fusing or boosting (at least 10 * k)
    rerank: str = "none"  # "none" | "maxsim" | "model" (core.store.rerank)
    rerank_depth: int = 20  # how many first-stage hits the reranker re-orders
    # the reranker's weight in the fusion with the first-stage rank (1: its order alone); None: DEFAULT_WEIGHTS's
    rerank_weight: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"retrieval mode must be one of {', '.join(MODES)} (got '{self.mode}')")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"fusion must be one of {', '.join(FUSIONS)} (got '{self.fusion}')")
        if not 0.0 <= self.lexical_weight <= 1.0:
            raise ConfigError(f"lexical weight must be between 0 and 1 (got {self.lexical_weight})")
        if self.rrf_k < 1 or self.pool < 1:
            raise ConfigError("rrf_k and pool must be at least 1")
        if self.rerank not in RERANKERS:
            raise ConfigError(f"rerank must be one of {', '.join(RERANKERS)} (got '{self.rerank}')")
        if self.rerank_weight is None:
            object.__setattr__(self, "rerank_weight", DEFAULT_WEIGHTS[self.rerank])
        if self.rerank_depth < 1 or not 0.0 <= self.rerank_weight <= 1.0:
            raise ConfigError("rerank depth must be at least 1 and its weight between 0 and 1")

    @property
    def uses_lexical(self) -> bool:
        return self.mode != "dense"

    def describe(self) -> dict[str, Any]:
        """What a report records under "retrieval"."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "hybrid":
            out.update(fusion=self.fusion, lexical_weight=self.lexical_weight, pool=self.pool)
            if self.fusion == "rrf":
                out["rrf_k"] = self.rrf_k
        elif self.mode == "bm25":
            out["pool"] = self.pool
        if self.uses_lexical:
            out["lexical"] = (f"bm25s lucene k1=1.5 b=0.75; tokenizer {TOKENIZER_VERSION}: English stop words and "
                              "one-character letters and digits dropped, Snowball stemming, CJK character bigrams")
        if self.rerank != "none":
            out.update(rerank=self.rerank, rerank_depth=self.rerank_depth, rerank_weight=self.rerank_weight)
        return out


@dataclass
class Hit:
    chunk: Chunk
    score: float
    rank: int
    similarity: float = 0.0  # the plain cosine similarity (dense mode), before any policy boost
    tag_match: float | None = None  # the retrieval policy's match of the question with this chunk
    children: list[tuple[Chunk, float]] = field(default_factory=list)  # multi-granular: the child hits behind it
    unit_id: str = ""  # the indexed unit behind the score: the chunk itself, or a parent's best child
    dense_rank: int | None = None  # 1-based, among the searched chunks; None: beyond the candidate pool
    dense_score: float | None = None  # cosine similarity
    lexical_rank: int | None = None  # 1-based; None: no query token occurs in the chunk
    lexical_score: float | None = None  # BM25
    first_rank: int | None = None  # with a reranker: the rank before it re-ordered the hits
    rerank_score: float | None = None  # with a reranker: its score


@dataclass
class QueryTags:
    """A question's tags and what the retrieval policy did with them."""

    tags: dict[str, Any]
    applied: str = "none"  # "filter", "boost", "route", "none (no model)", "none (no title named)", ...
    values: list[str] = field(default_factory=list)  # the chunk values a filter kept
    label: str = "question CNM"  # the policy's name for them (`RetrievalPolicy.label`)


@dataclass
class Candidate:
    """One indexed unit in a fused ranking, with where it stood on each side."""

    cid: str
    score: float
    dense_rank: int | None = None
    dense_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None


def _sides(dense: Sequence[tuple[str, float]],
           lexical: Sequence[tuple[str, float]]) -> dict[str, Candidate]:
    out: dict[str, Candidate] = {}
    for rank, (cid, s) in enumerate(dense, start=1):
        out[cid] = Candidate(cid, 0.0, rank, s)
    for rank, (cid, s) in enumerate(lexical, start=1):
        c = out.setdefault(cid, Candidate(cid, 0.0))
        c.lexical_rank, c.lexical_score = rank, s
    return out


def _ranked(cands: dict[str, Candidate]) -> list[Candidate]:
    # ties broken by dense rank, then lexical rank: the same inputs always give the same order
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


def minmax(values: Sequence[float]) -> list[float]:
    """Scale to [0, 1] over the list (all 1.0 when every value is equal)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


def fuse_weighted(dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]],
                  lexical_weight: float) -> list[Candidate]:
    """(1 - w) * min-max(cosine) + w * min-max(BM25), each normalised over its own candidate list."""
    cands = _sides(dense, lexical)
    for (cid, _), v in zip(dense, minmax([s for _, s in dense])):
        cands[cid].score += (1.0 - lexical_weight) * v
    for (cid, _), v in zip(lexical, minmax([s for _, s in lexical])):
        cands[cid].score += lexical_weight * v
    return _ranked(cands)


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


class Retriever:
    def __init__(self, store: VectorStore, collection: str, chunks: Sequence[Chunk], embedder: Embedder,
                 policy: RetrievalPolicy | None = None, settings: RetrievalSettings | None = None,
                 lexical: LexicalIndex | None = None, explain: bool = False,
                 reranker: Reranker | None = None) -> None:
        self.store = store
        self.collection = collection
        self.by_id = {c.chunk_id: c for c in chunks}
        self.embedder = embedder
        self.policy = policy
        self.settings = settings or RetrievalSettings()
        if self.settings.uses_lexical and lexical is None:
            raise ConfigError(f"retrieval mode '{self.settings.mode}' needs the run's lexical index")
        self.lexical = lexical
        self.explain = explain
        if self.settings.rerank != "none" and reranker is None:
            raise ConfigError(f"rerank '{self.settings.rerank}' needs a reranker")
        self.reranker = reranker if self.settings.rerank != "none" else None
        self.has_children = any(c.parent_id for c in chunks)
        self.chunk_values = sorted({v for c in chunks if (v := policy.chunk_value(c))}) if policy else []
        self.last_query_tags: list[QueryTags] = []
        self._value_of: np.ndarray | None = None  # per lexical position: the unit's policy value (for masks)

    def _hits(self, found: list[tuple[str, float]]) -> list[Hit]:
        return [Hit(self.by_id[cid], score, rank, score, unit_id=cid, dense_rank=rank, dense_score=score)
                for rank, (cid, score) in enumerate(found, start=1)]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        if self.settings.mode == "bm25" and not self.explain and self.reranker is None:  # no vector is read
            return self.search_vectors(queries, np.zeros((len(queries), 1), dtype=np.float32), k)
        return self.search_vectors(queries, self.embedder.embed(list(queries)), k)

    def search_vectors(self, queries: Sequence[str], vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """`search_many` with the queries' vectors already made by this retriever's embedder, so a caller asking
        several retrievers the same question embeds it once (the texts are still needed for CNM and BM25)."""
        if not queries:
            return []
        self.last_query_tags = []
        q_tags: list[dict[str, Any] | None] = [None] * len(queries)
        if self.policy is not None and not (self.has_children and self.settings.mode == "dense"
                                            and self.policy.mode != "filter"):
            q_tags = list(self.policy.tag_queries(list(queries), self.chunk_values))
        n = max(k, self.settings.rerank_depth) if self.reranker is not None else k
        if self.settings.mode == "dense":
            results = self._dense(vectors, q_tags, n)
        else:
            results = [self._fused(q, v, qt, n) for q, v, qt in zip(queries, vectors, q_tags)]
        if self.reranker is not None:
            results = [self._reranked(q, v, hits, k) for q, v, hits in zip(queries, vectors, results)]
        if self.explain:
            filtering = (self.policy is not None and self.policy.mode == "filter"
                         and len(self.last_query_tags) == len(queries))
            for i, (q, v, hits) in enumerate(zip(queries, vectors, results)):
                self._explain(q, v, hits, k, self.last_query_tags[i].values if filtering else [])
        return results

    def _reranked(self, query: str, vector: np.ndarray, hits: list[Hit], k: int) -> list[Hit]:
        """The first `rerank_depth` hits re-ordered by the reranker (fused with their first rank), then the top k."""
        assert self.reranker is not None
        head = hits[:self.settings.rerank_depth]
        scores = self.reranker.scores(query, vector, [h.chunk for h in head])
        order = rerank_order(scores, float(self.settings.rerank_weight or 0.0), self.settings.rrf_k)
        out = [head[i] for i in order] + hits[len(head):]
        for rank, hit in enumerate(out, start=1):
            hit.first_rank = hit.rank
            hit.rank = rank
        for i, hit in enumerate(head):
            hit.rerank_score = scores[i]
        return out[:k]

    # -- dense: the original behaviour ------------------------------------------------------------------------

    def _dense(self, vectors: np.ndarray, q_tags: list[dict[str, Any] | None], k: int) -> list[list[Hit]]:
        if self.has_children:
            pool = max(50, 10 * k)
            if self.policy is not None and self.policy.mode == "filter":
                return [self._children_filtered(vec, qt, k, pool) for vec, qt in zip(vectors, q_tags)]
            return [parents_by_best_child(found, self.by_id, k) for found in
                    self.store.query(self.collection, vectors, pool)]
        if self.policy is None:
            return [self._hits(found) for found in self.store.query(self.collection, vectors, k)]
        results = []
        for vec, qt in zip(vectors, q_tags):
            assert qt is not None
            if self.policy.mode == "filter":
                results.append(self._filtered(vec, qt, k))
            else:
                results.append(self._boosted(vec, qt, k))
        return results

    def _filter_values(self, tags: dict[str, Any]) -> list[str]:
        """The chunk values a filter keeps for this question (recorded in `last_query_tags`); [] = unfiltered."""
        assert self.policy is not None
        values, applied = self.policy.filter_values(tags, self.chunk_values)
        self.last_query_tags.append(QueryTags(tags, applied, values, self.policy.label))
        return values

    def _where(self, values: list[str]) -> dict[str, Any] | None:
        assert not values or self.policy is not None
        return {self.policy.store_field: {"$in": values}} if values and self.policy else None

    def _filtered(self, vector, tags: dict[str, Any], k: int) -> list[Hit]:
        values = self._filter_values(tags)
        if not values:
            return self._hits(self.store.query(self.collection, vector[None, :], k)[0])
        hits = self._hits(self.store.query(self.collection, vector[None, :], k, where=self._where(values))[0])
        for h in hits:
            h.tag_match = 1.0
        return hits

    def _children_filtered(self, vector, tags: dict[str, Any] | None, k: int, pool: int) -> list[Hit]:
        assert tags is not None
        values = self._filter_values(tags)
        hits = parents_by_best_child(self.store.query(self.collection, vector[None, :], pool,
                                                      where=self._where(values))[0], self.by_id, k)
        for h in hits:
            h.tag_match = 1.0 if values else None
        return hits

    def _boosted(self, vector, tags: dict[str, Any], k: int) -> list[Hit]:
        assert self.policy is not None
        pool = self.store.query(self.collection, vector[None, :], max(k, self.policy.pool))[0]
        scored = []
        for cid, sim in pool:
            chunk = self.by_id[cid]
            match = self.policy.match(tags, chunk)
            scored.append((sim + self.policy.boost * match, sim, match, chunk))
        scored.sort(key=lambda t: -t[0])
        self.last_query_tags.append(QueryTags(tags, "boost", label=self.policy.label))
        return [Hit(chunk, score, rank, sim, match, unit_id=chunk.chunk_id) for rank, (score, sim, match, chunk) in
                enumerate(scored[:k], start=1)]

    # -- bm25 and hybrid ----------------------------------------------------------------------------------------

    def _mask(self, values: list[str]) -> np.ndarray:
        assert self.lexical is not None and self.policy is not None
        if self._value_of is None:
            self._value_of = np.array([self.policy.chunk_value(self.by_id[cid]) for cid in self.lexical.ids],
                                      dtype=object)
        return np.isin(self._value_of, values)

    def _fused(self, query: str, vector: np.ndarray, qt: dict[str, Any] | None, k: int) -> list[Hit]:
        assert self.lexical is not None
        s = self.settings
        pool = max(s.pool, 10 * k, self.policy.pool if self.policy else 0)
        values = (self._filter_values(qt) if self.policy and self.policy.mode == "filter" and qt is not None
                  else [])
        where = self._where(values)
        lexical_query = self.policy.residual_query(query, qt) if values and self.policy and qt else query
        lexical = self.lexical.search(lexical_query, pool, self._mask(values) if values else None)
        if s.mode == "bm25":
            cands = [Candidate(cid, sc, lexical_rank=r, lexical_score=sc) for r, (cid, sc) in
                     enumerate(lexical, start=1)]
        else:
            dense = self.store.query(self.collection, vector[None, :], pool, where)[0]
            cands = (fuse_rrf(dense, lexical, s.lexical_weight, s.rrf_k) if s.fusion == "rrf"
                     else fuse_weighted(dense, lexical, s.lexical_weight))
        by_cid = {c.cid: c for c in cands}
        if self.has_children:
            hits = parents_by_best_child([(c.cid, c.score) for c in cands], self.by_id, k)
        elif self.policy is not None and self.policy.mode == "boost" and qt is not None:
            hits = self._boost_candidates(cands, qt, k)
        else:
            hits = [Hit(self.by_id[c.cid], c.score, r, unit_id=c.cid) for r, c in enumerate(cands[:k], start=1)]
        for h in hits:
            c = by_cid[h.unit_id]
            h.dense_rank, h.dense_score, h.lexical_rank, h.lexical_score = (
                c.dense_rank, c.dense_score, c.lexical_rank, c.lexical_score)
            h.similarity = c.dense_score or 0.0
            if values:
                h.tag_match = 1.0
        return hits

    def _boost_candidates(self, cands: list[Candidate], tags: dict[str, Any], k: int) -> list[Hit]:
        assert self.policy is not None
        scored = []
        for c, norm in zip(cands, minmax([c.score for c in cands])):
            match = self.policy.match(tags, self.by_id[c.cid])
            scored.append((norm + self.policy.boost * match, match, c))
        scored.sort(key=lambda t: -t[0])
        self.last_query_tags.append(QueryTags(tags, "boost", label=self.policy.label))
        return [Hit(self.by_id[c.cid], score, rank, tag_match=match, unit_id=c.cid)
                for rank, (score, match, c) in enumerate(scored[:k], start=1)]

    # -- explanations ---------------------------------------------------------------------------------------------

    def _explain(self, query: str, vector: np.ndarray, hits: list[Hit], k: int, values: list[str]) -> None:
        """Fill in each hit's dense and lexical rank and score where the search itself did not give them; ranks
        are among the chunks searched (those a policy's filter kept, when it applied)."""
        pool = max(self.settings.pool, 10 * k)
        need_dense = [h for h in hits if h.dense_score is None]
        if need_dense:
            where = self._where(values)
            dense = {cid: (r, s) for r, (cid, s) in
                     enumerate(self.store.query(self.collection, vector[None, :], pool, where)[0], start=1)}
            missing = [h.unit_id for h in need_dense if h.unit_id not in dense]
            stored = self.store.vectors(self.collection, missing)
            q = vector / (np.linalg.norm(vector) or 1.0)
            for h in need_dense:
                if h.unit_id in dense:
                    h.dense_rank, h.dense_score = dense[h.unit_id]
                elif h.unit_id in stored:
                    v = stored[h.unit_id]
                    h.dense_score = float(np.dot(q, v / (np.linalg.norm(v) or 1.0)))
        if self.lexical is not None and any(h.lexical_score is None for h in hits):
            scores = self.lexical.scores(query)
            if values:
                scores = np.where(self._mask(values), scores, 0.0)
            for h in hits:
                pos = self.lexical.position.get(h.unit_id)
                if h.lexical_score is None and pos is not None:
                    h.lexical_score = float(scores[pos])
                    h.lexical_rank = LexicalIndex.rank_of(scores, pos)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

