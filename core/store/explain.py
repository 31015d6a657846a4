"""Explained hits: each hit's dense rank and cosine and its lexical rank and BM25 score, whatever the mode (the
Query page shows them side by side). Only what the search itself did not give is filled in; ranks are among the
units searched (those a policy's filter kept, when it applied)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.schema.hits import Hit
from core.store.lexical import LexicalIndex
from core.store.searches import DenseSearch, Probe


class Explainer:
    def __init__(self, dense: DenseSearch, lexical: LexicalIndex | None, pool: int) -> None:
        self.dense, self.lexical, self.pool = dense, lexical, pool

    def fill(self, query: str, probe: Probe, hits: Sequence[Hit], k: int) -> None:
        """`probe`: what was searched (its scope); `query`: the question as asked (BM25 explains that)."""
        pool = max(self.pool, 10 * k)
        need_dense = [h for h in hits if h.dense_score is None]
        if need_dense:
            dense = {cid: (r, s) for r, (cid, s) in enumerate(self.dense.ranked(probe, pool), start=1)}
            missing = [h.unit_id for h in need_dense if h.unit_id not in dense]
            stored = self.dense.store.vectors(self.dense.collection, missing)
            q = probe.vector / (np.linalg.norm(probe.vector) or 1.0)
            for h in need_dense:
                if h.unit_id in dense:
                    h.dense_rank, h.dense_score = dense[h.unit_id]
                elif h.unit_id in stored:
                    v = stored[h.unit_id]
                    h.dense_score = float(np.dot(q, v / (np.linalg.norm(v) or 1.0)))
        if self.lexical is not None and any(h.lexical_score is None for h in hits):
            scores = self.lexical.scores(query)
            if probe.mask is not None:
                scores = np.where(probe.mask, scores, 0.0)
            for h in hits:
                pos = self.lexical.position.get(h.unit_id)
                if h.lexical_score is None and pos is not None:
                    h.lexical_score = float(scores[pos])
                    h.lexical_rank = LexicalIndex.rank_of(scores, pos)
