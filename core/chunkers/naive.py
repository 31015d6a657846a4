"""CHOP's Naive-500T baseline: fixed windows of tiktoken tokens with overlap."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, check_overlap, check_tokens, token_window_chunks
from core.chunkers.registry import register
from core.schema.chunks import Chunking
from core.schema.documents import Document


@register
@dataclass
class NaiveTokenChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "naive-500t"
    version = 2  # v1 shrank a window whose text re-tokenised to more than `size` and shifted the next ones
    size: int = 500
    overlap: int = 100

    def validate(self) -> None:
        check_tokens(self.name, "size", self.size)
        check_overlap(self.name, self.overlap, self.size)

    def chunk(self, doc: Document) -> Chunking:
        return Chunking(token_window_chunks(doc, self.size, self.overlap))
