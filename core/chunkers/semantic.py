"""LGMGC's semantic baseline (the percentile breakpoint method popularised by LangChain's SemanticChunker):
each sentence is seen together with `buffer` neighbours on each side; a break goes where the cosine
distance between consecutive windows is above the given percentile of all distances; a hard token cap
splits what is still too long.

How a window is embedded (`buffer_by`): "vectors" (default) embeds every sentence once and takes the mean of the
window's sentence vectors; "text" embeds the window's joined text, as LangChain does, which makes the model
read every sentence 2 * buffer + 1 times (2.7x the cost of one pass with buffer 1). The README compares both
on the same evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_range, check_tokens
from core.chunkers.registry import register
from core.chunkers.sentence import sentence_units
from core.chunkers.similarity import neighbour_similarity, spans_from_breaks, unit_vectors
from core.chunkers.snippets import chunklens_snippet
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunking
from core.schema.documents import Document

#: the widest window either side of a sentence. With `buffer_by=text` every window's text is embedded, and under
#: the `window` long-text policy all of it is read, so the work grows with buffer times text: a buffer as long as
#: the text read all of it once per sentence (10 KB 63 s, 20 KB 243 s). With at most 4 either side each sentence is
#: read at most 9 times, so the work grows with the text alone; four sentences either side is already a paragraph
#: of context (LangChain's default is one).
MAX_BUFFER = 4
#: how a sentence's window is embedded (`buffer_by`)
BufferBy = Literal["vectors", "text"]


@register
@dataclass
class SemanticChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "semantic"
    needs = ("embedder",)
    percentile: float = 95.0
    buffer: int = 1
    max_tokens: int = 500
    buffer_by: BufferBy = "vectors"
    version = 2  # v1 always embedded the windows' text (now buffer_by=text)

    def validate(self) -> None:
        check_range(self.name, "percentile", self.percentile, 0, 100)
        check_range(self.name, "buffer", self.buffer, 0, MAX_BUFFER, "sentences either side",
                    "each sentence is embedded again with every window it is in")
        check_tokens(self.name, "max_tokens", self.max_tokens)
        if self.buffer_by not in get_args(BufferBy):
            raise ConfigError(f"semantic: buffer_by must be vectors or text (got '{self.buffer_by}')")

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        text = doc.text
        units = sentence_units(text, self.max_tokens)
        distances = 1.0 - neighbour_similarity(self._window_vectors(text, units))
        threshold = float(np.percentile(distances, self.percentile)) if len(distances) else 0.0
        breaks = [i + 1 for i, d in enumerate(distances) if d > threshold]
        spans = spans_from_breaks(text, units, breaks, self.max_tokens)
        trace: JsonObject = {
            "kind": "distance",
            "threshold": round(threshold, 4),
            "rule": f"break where distance > {self.percentile:g}th percentile",
            "positions": [units[i + 1][0] for i in range(len(distances))],
            "values": [round(float(v), 4) for v in distances],
        }
        return Chunking(build_chunks(doc, spans), trace)

    def _window_vectors(self, text: str, units: list[tuple[int, int]]) -> np.ndarray:
        """One unit vector per sentence for the window of `buffer` sentences either side of it."""
        n, b = len(units), self.buffer
        if self.buffer_by == "text":
            windows = [text[units[max(0, i - b)][0] : units[min(n - 1, i + b)][1]] for i in range(n)]
            return unit_vectors(self.context.embedder, windows)
        vectors = unit_vectors(self.context.embedder, [text[s:e] for s, e in units])
        if b == 0 or n == 0:
            return vectors
        running = np.concatenate((np.zeros((1, vectors.shape[1]), vectors.dtype), np.cumsum(vectors, axis=0)))
        lo, hi = np.maximum(np.arange(n) - b, 0), np.minimum(np.arange(n) + b + 1, n)
        sums = running[hi] - running[lo]  # the window's sum; its direction is that of its mean
        return sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
