"""CHOP's Cosine-Chunking baseline (after ChunkRAG): embed every sentence and start a new chunk wherever the
cosine similarity of two adjacent sentences falls below a threshold. The paper has no size cap; `max_tokens`
adds one (sentences longer than the cap are split on words)."""

from __future__ import annotations

from dataclasses import dataclass

from core import text as T
from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_tokens
from core.chunkers.registry import register
from core.chunkers.sentence import sentence_units
from core.chunkers.similarity import neighbour_similarity, spans_from_breaks, unit_vectors
from core.chunkers.snippets import chunklens_snippet
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunking
from core.schema.documents import Document


@register
@dataclass
class CosineChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "cosine"
    needs = ("embedder",)
    threshold: float = 0.35
    max_tokens: int | None = None

    def validate(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ConfigError("cosine: threshold is a cosine similarity, between -1 and 1")
        if self.max_tokens is not None:
            check_tokens(self.name, "max_tokens", self.max_tokens)

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        units = sentence_units(doc.text, self.max_tokens) if self.max_tokens else T.sentences(doc.text)
        vecs = unit_vectors(self.context.embedder, [doc.text[s:e] for s, e in units])
        sims = neighbour_similarity(vecs)
        breaks = [i + 1 for i, sim in enumerate(sims) if sim < self.threshold]
        spans = spans_from_breaks(doc.text, units, breaks, self.max_tokens)
        trace: JsonObject = {
            "kind": "similarity",
            "threshold": self.threshold,
            "rule": "break where similarity < threshold",
            "positions": [units[i + 1][0] for i in range(len(sims))],
            "values": [round(float(v), 4) for v in sims],
        }
        return Chunking(build_chunks(doc, spans), trace)
