"""CHOP's Naive-500T baseline: fixed windows of tiktoken tokens with overlap."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import Chunker, Chunking, build_chunks, register
from core.chunkers.splitting import token_windows
from core.documents import Document
from core.errors import ConfigError


@register
@dataclass
class NaiveTokenChunker(Chunker):
    name = "naive-500t"
    size: int = 500
    overlap: int = 100

    def validate(self) -> None:
        if self.size < 1 or not 0 <= self.overlap < self.size:
            raise ConfigError(f"naive-500t: need size >= 1 and 0 <= overlap < size (got {self.size}/{self.overlap})")

    def chunk(self, doc: Document) -> Chunking:
        spans = token_windows(doc.text, 0, len(doc.text), self.size, self.overlap)
        return Chunking(build_chunks(doc, spans))
