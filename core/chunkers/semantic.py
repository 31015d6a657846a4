"""LGMGC's semantic baseline (the percentile breakpoint method popularised by LangChain's SemanticChunker):
each sentence is embedded together with `buffer` neighbours on each side; a break goes where the cosine
distance between consecutive windows is above the given percentile of all distances; a hard token cap
splits what is still too long."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.chunkers.base import Chunker, Chunking, build_chunks, register
from core.chunkers.sentence import sentence_units
from core.chunkers.similarity import neighbour_similarity, spans_from_breaks, unit_vectors
from core.documents import Document
from core.errors import ConfigError


@register
@dataclass
class SemanticChunker(Chunker):
    name = "semantic"
    needs = ("embedder",)
    percentile: float = 95.0
    buffer: int = 1
    max_tokens: int = 500

    def validate(self) -> None:
        if not 0 <= self.percentile <= 100 or self.buffer < 0 or self.max_tokens < 1:
            raise ConfigError("semantic: need 0 <= percentile <= 100, buffer >= 0, max_tokens >= 1")

    def chunk(self, doc: Document) -> Chunking:
        text = doc.text
        units = sentence_units(text, self.max_tokens)
        n = len(units)
        windows = [text[units[max(0, i - self.buffer)][0] : units[min(n - 1, i + self.buffer)][1]] for i in range(n)]
        distances = 1.0 - neighbour_similarity(unit_vectors(self.context.embedder, windows))
        threshold = float(np.percentile(distances, self.percentile)) if len(distances) else 0.0
        breaks = [i + 1 for i, d in enumerate(distances) if d > threshold]
        spans = spans_from_breaks(text, units, breaks, self.max_tokens)
        trace = {
            "kind": "distance",
            "threshold": round(threshold, 4),
            "rule": f"break where distance > {self.percentile:g}th percentile",
            "positions": [units[i + 1][0] for i in range(len(distances))],
            "values": [round(float(v), 4) for v in distances],
        }
        return Chunking(build_chunks(doc, spans), trace)
