"""CHOP's Naive-500T baseline: fixed windows of tiktoken tokens with overlap."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, token_window_chunks
from core.chunkers.registry import register
from core.errors import ConfigError
from core.ingest.documents import Document
from core.model import Chunking


@register
@dataclass
class NaiveTokenChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "naive-500t"
    version = 2  # v1 shrank a window whose text re-tokenised to more than `size` and shifted the next ones
    size: int = 500
    overlap: int = 100

    def validate(self) -> None:
        if self.size < 1 or not 0 <= self.overlap < self.size:
            raise ConfigError(f"naive-500t: need size >= 1 and 0 <= overlap < size (got {self.size}/{self.overlap})")

    def chunk(self, doc: Document) -> Chunking:
        return Chunking(token_window_chunks(doc, self.size, self.overlap))
