"""Top-k retrieval over an indexed chunk run, composed from parts that each do one thing.

- A base retriever ranks the run's indexed units (`core.store.searches`): "dense" (Chroma, cosine: the original
  behaviour, unchanged), "bm25" (`core.store.lexical`, over the same text the chunks were embedded with), or
  "hybrid" (both lists `pool` deep, fused by reciprocal rank or by weighted normalised scores,
  `core.store.fusion`). One `RetrievalSettings` for every chunker of a comparison keeps it fair.
- The units become hits (`core.store.hits`): each its own, or in a multi-granular run (children indexed) each
  parent by its best child, in every mode.
- A chunker's `RetrievalPolicy` (`Chunker.retrieval_policy`: CHOP's CNM filter and boost in
  `core.methods.chop.policy`, title routing in `core.store.routing`) wraps that in any mode, parents merged or not
  (`core.store.policy_search`).
- A reranker (`core.store.rerank`, `RetrievalSettings.rerank`) re-orders the top `rerank_depth` hits before the
  top k are kept.
- With `explain`, every hit also carries its dense rank and cosine and its lexical rank and BM25 score, whatever
  the mode (`core.store.explain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunk, RetrievalPolicy
from core.schema.hits import Answer, Hit, QueryTags
from core.store.choices import FUSIONS, MODES, RERANKERS, Fusion, RerankerName, RetrievalMode
from core.store.embeddings import Embedder
from core.store.explain import Explainer
from core.store.hits import ParentMerge, Units
from core.store.index import VectorStore
from core.store.lexical import TOKENIZER_VERSION, LexicalIndex
from core.store.policy_search import PolicySearch
from core.store.rerank import DEFAULT_WEIGHTS, Reranker, reranked
from core.store.searches import BaseSearch, DenseSearch, FusedSearch, LexicalSearch, Probe


@dataclass(frozen=True)
class RetrievalSettings:
    """How every chunker of a comparison is searched. This class defaults to plain dense search; the app's and the
    command line's defaults (hybrid, RRF, lexical weight 0.9) live in `core.settings.Settings`, chosen by
    measurement across the shared sets (docs/RETRIEVAL.md)."""

    mode: RetrievalMode = "dense"
    fusion: Fusion = "rrf"
    lexical_weight: float = 0.9
    rrf_k: int = 60
    pool: int = 100  # candidates taken from each side before fusing or boosting (at least 10 * k)
    rerank: RerankerName = "none"  # core.store.rerank
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
        weight = DEFAULT_WEIGHTS[self.rerank] if self.rerank_weight is None else self.rerank_weight
        object.__setattr__(self, "rerank_weight", weight)
        if self.rerank_depth < 1 or not 0.0 <= weight <= 1.0:
            raise ConfigError("rerank depth must be at least 1 and its weight between 0 and 1")

    @property
    def uses_lexical(self) -> bool:
        return self.mode != "dense"

    def describe(self) -> JsonObject:
        """What a report records under "retrieval"."""
        out: JsonObject = {"mode": self.mode}
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


#: how deep dense search looks among a multi-granular run's children (at least)
CHILD_POOL = 50


def base_search(settings: RetrievalSettings, store: VectorStore, collection: str, lexical: LexicalIndex | None,
                pool: int) -> BaseSearch:
    """The base retriever `settings.mode` names; `pool`: how deep the lexical side looks (at least)."""
    dense = DenseSearch(store, collection)
    if settings.mode == "dense":
        return dense
    if lexical is None:
        raise ConfigError(f"retrieval mode '{settings.mode}' needs the run's lexical index")
    bm25 = LexicalSearch(lexical, pool)
    if settings.mode == "bm25":
        return bm25
    return FusedSearch(dense, bm25, settings.fusion, settings.lexical_weight, settings.rrf_k)


class Retriever:
    """One indexed run's search, put together from the settings: base retriever, hits (parents merged in a
    multi-granular run), the chunker's policy, the reranker, explanations."""

    def __init__(self, store: VectorStore, collection: str, chunks: Sequence[Chunk], embedder: Embedder,
                 policy: RetrievalPolicy | None = None, settings: RetrievalSettings | None = None,
                 lexical: LexicalIndex | None = None, explain: bool = False,
                 reranker: Reranker | None = None) -> None:
        self.store, self.collection, self.embedder = store, collection, embedder
        self.by_id = {c.chunk_id: c for c in chunks}
        self.settings = s = settings or RetrievalSettings()
        if s.rerank != "none" and reranker is None:
            raise ConfigError(f"rerank '{s.rerank}' needs a reranker")
        self.reranker = reranker if s.rerank != "none" else None
        base = base_search(s, store, collection, lexical, max(s.pool, policy.pool if policy else 0))
        self.units: Units | ParentMerge = (
            ParentMerge(base, self.by_id, CHILD_POOL if s.mode == "dense" else 0) if any(c.parent_id for c in chunks)
            else Units(base, self.by_id))
        self.policy = (PolicySearch(self.units, policy, self.by_id, lexical.ids if lexical is not None else None,
                                    base.normalised_for_boost) if policy is not None else None)
        self.explainer = Explainer(DenseSearch(store, collection), lexical, s.pool) if explain else None
        self.reads_vectors = s.mode != "bm25" or explain or self.reranker is not None

    def answers(self, queries: Sequence[str], vectors: np.ndarray, k: int) -> list[Answer]:
        """Each question's top k hits (and its tags, with a policy); `vectors` are the questions' from this
        retriever's embedder, so a caller asking several retrievers the same question embeds it once."""
        if not queries:
            return []
        queries = list(queries)
        n = max(k, self.settings.rerank_depth) if self.reranker is not None else k
        tags: Sequence[QueryTags | None]
        if self.policy is None:
            tags = [None] * len(queries)
            probes = [Probe(q, v) for q, v in zip(queries, vectors)]
            found = self.units.hits(probes, n, self.units.depth(n))
        else:
            tags = tagged = self.policy.tag(queries)
            probes = [self.policy.probe(q, v, t) for q, v, t in zip(queries, vectors, tagged)]
            found = self.policy.hits(probes, tagged, n)
        if self.reranker is not None:
            s = self.settings
            found = [reranked(self.reranker, q, v, hits, k, s.rerank_depth, float(s.rerank_weight or 0.0), s.rrf_k)
                     for q, v, hits in zip(queries, vectors, found)]
        if self.explainer is not None:
            for q, p, hits in zip(queries, probes, found):
                self.explainer.fill(q, p, hits, k)
        return [Answer(hits, t) for hits, t in zip(found, tags)]

    def ask_many(self, queries: Sequence[str], k: int) -> list[Answer]:
        """`answers`, the questions embedded here (BM25 alone reads no vector, so none is made for it)."""
        if not queries:
            return []
        vectors = (self.embedder.embed(list(queries)) if self.reads_vectors
                   else np.zeros((len(queries), 1), dtype=np.float32))
        return self.answers(queries, vectors, k)

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [a.hits for a in self.ask_many(queries, k)]

    def ask(self, query: str, k: int) -> Answer:
        return self.ask_many([query], k)[0]

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]
