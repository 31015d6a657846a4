"""One chunk per blank-line paragraph; small neighbours merged up to θ words, long paragraphs split on lines,
sentences and words so that no chunk exceeds θ."""

from __future__ import annotations

from dataclasses import dataclass

from core import text as T
from core.chunkers.base import Chunker, Chunking, build_chunks, register
from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, pack, split_to_cap
from core.documents import Document
from core.errors import ConfigError


@register
@dataclass
class ParagraphChunker(Chunker):
    name = "paragraph"
    theta: int = 200

    def validate(self) -> None:
        if self.theta < 1:
            raise ConfigError("paragraph: theta (words per chunk) must be at least 1")

    def chunk(self, doc: Document) -> Chunking:
        pieces: list[tuple[int, int]] = []
        for s, e in T.paragraphs(doc.text):
            pieces.extend(split_to_cap(doc.text, s, e, WORDS, self.theta, STRUCTURE_LEVELS[1:]))
        return Chunking(build_chunks(doc, pack(doc.text, pieces, WORDS, self.theta)))
