"""LGMGC's recursive baseline: split on paragraph, line, sentence and word separators until every piece holds
at most θ words, then pack neighbouring pieces back together up to θ."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_words
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, split_to_cap
from core.schema.chunks import Chunking
from core.schema.documents import Document


@register
@dataclass
class RecursiveChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "recursive"
    version = 2  # v1 split sentences with pysbd; v2 with sentencex (text.separator_sentences)
    theta: int = 200

    def validate(self) -> None:
        check_words(self.name, "theta", self.theta)

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        spans = split_to_cap(doc.text, 0, len(doc.text), WORDS, self.theta, STRUCTURE_LEVELS)
        return Chunking(build_chunks(doc, spans))
