"""Paragraph chunks: whole blank-line paragraphs, small neighbours merged up to θ words.

Every chunk is either a run of whole paragraphs or lies inside one paragraph: a paragraph longer than θ is
split on lines, sentences and words, and its pieces are packed only with each other, never with the next
paragraph. That is what separates it from `recursive`, whose pieces of a long paragraph may share a chunk with
the start of the following one.
"""

from __future__ import annotations

from dataclasses import dataclass

from core import text as T
from core.chunkers.base import Chunker, Chunking, MetadataPrefix, build_chunks, register
from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, SizedSpan, pack_sized, split_sized
from core.documents import Document
from core.errors import ConfigError


@register
@dataclass
class ParagraphChunker(MetadataPrefix, Chunker):
    name = "paragraph"
    #: v1 packed pieces of long paragraphs with their neighbours, which made it equal to recursive; v2 split long
    #: paragraphs' sentences with pysbd, v3 with sentencex (the recursive levels)
    version = 3
    theta: int = 200

    def validate(self) -> None:
        if self.theta < 1:
            raise ConfigError("paragraph: theta (words per chunk) must be at least 1")

    def chunk(self, doc: Document) -> Chunking:
        paragraphs = T.paragraphs(doc.text)
        spans: list[SizedSpan] = []
        run: list[SizedSpan] = []  # consecutive paragraphs that fit θ, merged by `pack_sized`
        for (s, e), n in zip(paragraphs, WORDS.sizes(doc.text, paragraphs), strict=True):
            if n <= self.theta:
                run.append((s, e, n))
                continue
            spans.extend(pack_sized(doc.text, run, WORDS, self.theta))
            run = []
            spans.extend(split_sized(doc.text, s, e, WORDS, self.theta, STRUCTURE_LEVELS[1:], n))
        spans.extend(pack_sized(doc.text, run, WORDS, self.theta))
        return Chunking(build_chunks(doc, [(s, e) for s, e, _ in spans]))
