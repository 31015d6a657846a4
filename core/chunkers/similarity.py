"""Pieces shared by the embedding-driven chunkers (cosine, semantic): sentence vectors, neighbour similarity,
and turning break positions into spans that respect an optional token cap."""

from __future__ import annotations

import numpy as np

from core.chunkers.splitting import TOKENS, pack
from core.infra.stopping import stop_checker
from core.schema.spans import Interval


def unit_vectors(embedder, texts: list[str]) -> np.ndarray:
    """Unit vectors of `texts`; the embedding (a long document's longest step) ends between two of the
    embedder's batches once the run is stopped, the batches done kept in its cache."""
    vecs = np.asarray(embedder.embed(texts, stop_checker()), dtype=np.float32)
    if len(vecs) == 0:
        return vecs.reshape(0, 0)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def neighbour_similarity(vecs: np.ndarray) -> np.ndarray:
    """Cosine similarity of each vector with the next one (length n-1)."""
    if len(vecs) < 2:
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,ij->i", vecs[:-1], vecs[1:])


def spans_from_breaks(text: str, units: list[Interval], breaks: list[int], cap: int | None) -> list[Interval]:
    """Group `units` into runs that end before each index in `breaks`; with a cap, split long runs by packing."""
    spans: list[Interval] = []
    edges = [0, *sorted(set(b for b in breaks if 0 < b < len(units))), len(units)]
    for a, b in zip(edges, edges[1:]):
        run = units[a:b]
        if not run:
            continue
        if cap is None:
            spans.append((run[0][0], run[-1][1]))
        else:
            spans.extend(pack(text, run, TOKENS, cap))
    return spans
