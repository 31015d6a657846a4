"""The retrieval choices by name, in one place: the settings (`core.settings.Settings`), the command line's flags
and the retriever (`core.store.retrieval.RetrievalSettings`, `core.store.rerank`) all take these types, so a name
one of them accepts is a name the others know. A leaf: it imports nothing."""

from __future__ import annotations

from typing import Literal, get_args

#: how every chunker is searched: embedding cosine, BM25 over the same embedded text, or both fused
RetrievalMode = Literal["dense", "bm25", "hybrid"]
#: how hybrid search fuses its two rankings: reciprocal rank, or a weighted sum of min-max scores
Fusion = Literal["rrf", "weighted"]
#: the second stage re-ordering each search's top hits: none, each chunk's best sentence, the operator's model
RerankerName = Literal["none", "maxsim", "model"]

MODES: tuple[str, ...] = get_args(RetrievalMode)
FUSIONS: tuple[str, ...] = get_args(Fusion)
RERANKERS: tuple[str, ...] = get_args(RerankerName)
