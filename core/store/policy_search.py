"""A chunker's retrieval policy (CHOP's CNM filter or boost, title routing) as a wrapper over the hits of any base
retriever, parents merged or not.

The policy tags each question first (`tag`), then either
- "filter": only units whose stored value the question's tags keep are searched, on both sides (a Chroma `where`
  on the policy's store field and a mask over the BM25 scores; a question the policy keeps nothing for is
  searched unfiltered). BM25 then reads the policy's `residual_query`: the question without the words the filter
  has matched (every unit left names the model, so those words would only favour the units that repeat it); or
- "boost": a wider pool is ranked, and each hit's score is raised by `boost` times the policy's match with its
  chunk (0 to 1). Cosines are boosted as they are; fused and BM25 scores are first min-max normalised over the
  pool, so the same boost means the same on every scale. In a multi-granular run the parents are boosted, after
  each took its best child's score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from core.schema.chunks import Chunk, RetrievalPolicy
from core.schema.hits import Hit, QueryTags
from core.store.fusion import minmax
from core.store.hits import ParentMerge, Units
from core.store.index import one_of
from core.store.searches import Probe


class PolicySearch:
    def __init__(self, inner: Units | ParentMerge, policy: RetrievalPolicy, by_id: Mapping[str, Chunk],
                 lexical_ids: Sequence[str] | None, normalised: bool) -> None:
        """`by_id`: the run's chunks (parents and children) by id; `lexical_ids`: the lexical index's units in
        position order (a filter masks them), None: no lexical index; `normalised`: whether the base's scores
        are min-max normalised before a boost."""
        self.inner, self.policy, self.normalised = inner, policy, normalised
        value = {cid: policy.chunk_value(c) for cid, c in by_id.items()}  # read once per chunk
        self.chunk_values = sorted({v for v in value.values() if v})
        self._value_of = (None if lexical_ids is None else
                          np.array([value[cid] for cid in lexical_ids], dtype=object))

    def tag(self, queries: Sequence[str]) -> list[QueryTags]:
        """Each question's tags, and for a filter the values it keeps."""
        p = self.policy
        out = []
        for tags in p.tag_queries(list(queries), self.chunk_values):
            if p.mode == "filter":
                values, applied = p.filter_values(tags, self.chunk_values)
                out.append(QueryTags(tags, applied, values, p.label))
            else:
                out.append(QueryTags(tags, "boost", label=p.label))
        return out

    def probe(self, query: str, vector: np.ndarray, tags: QueryTags) -> Probe:
        """The question as the base searches it: narrowed to the values a filter kept, if any."""
        if not tags.values:
            return Probe(query, vector)
        mask = None if self._value_of is None else np.isin(self._value_of, tags.values)
        return Probe(self.policy.residual_query(query, tags.tags), vector,
                     one_of(self.policy.store_field, tags.values), mask)

    def hits(self, probes: Sequence[Probe], tags: Sequence[QueryTags], k: int) -> list[list[Hit]]:
        """The top k hits of each probe (made by `probe` from the question and its `tags`)."""
        if self.policy.mode == "filter":
            found = self.inner.hits(probes, k, self.inner.depth(k))
            for hits, t in zip(found, tags):
                for h in hits:
                    h.tag_match = 1.0 if t.values else None
            return found
        pools = self.inner.hits(probes, None, max(self.inner.depth(k), self.policy.pool))
        return [self._boosted(hits, t, k) for hits, t in zip(pools, tags)]

    def _boosted(self, pool: list[Hit], tags: QueryTags, k: int) -> list[Hit]:
        scores = [h.score for h in pool]
        base = minmax(scores) if self.normalised else scores
        scored = []
        for b, h in zip(base, pool):
            match = self.policy.match(tags.tags, h.chunk)
            scored.append((b + self.policy.boost * match, match, h))
        scored.sort(key=lambda t: -t[0])
        out = []
        for rank, (score, match, h) in enumerate(scored[:k], start=1):
            h.score, h.rank, h.tag_match = score, rank, match
            out.append(h)
        return out
