"""Paragraph chunks: one blank-line paragraph per chunk; only headings and fragments are merged.

- A heading (a Markdown `#` line, or one short line with no closing punctuation) or a fragment (fewer than
  `fragment` words) joins the paragraph after it, while the two fit θ words; a fragment at the end joins the
  chunk before it if that fits.
- A paragraph longer than θ is split on lines, sentences and words, and its pieces are packed only with each
  other, never with another paragraph.

So every chunk is a run of whole paragraphs or lies inside one, and ordinary paragraphs are never packed together:
that is what separates it from `recursive`, which packs neighbouring paragraphs up to θ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core import text as T
from core.chunkers.base import (
    MAX_CHUNK_WORDS,
    Chunker,
    MetadataPrefix,
    TitleRouting,
    build_chunks,
    check_range,
    check_words,
)
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, SizedInterval, split_sized
from core.schema.chunks import Chunking
from core.schema.documents import Document

_HEADING_RE = re.compile(r"^(?:#{1,6}\s.*|[^\n]{1,80}(?<![.!?:;,。！？]))$")


@register
@dataclass
class ParagraphChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "paragraph"
    #: v1 packed pieces of long paragraphs with their neighbours, which made it equal to recursive; v2 split long
    #: paragraphs' sentences with pysbd, v3 with sentencex (the recursive levels); v4 packs no two ordinary
    #: paragraphs together (v3 still gave recursive's spans on the sample set)
    version = 4
    theta: int = 200
    fragment: int = 12  # a paragraph of fewer words is merged with the next one

    def validate(self) -> None:
        check_words(self.name, "theta", self.theta)
        check_range(self.name, "fragment", self.fragment, 0, MAX_CHUNK_WORDS, "words")

    def _small(self, text: str, n: int) -> bool:
        """A heading or a fragment: merged with its neighbour rather than a chunk of its own."""
        return n < self.fragment or (n <= 12 and bool(_HEADING_RE.match(text.strip())))

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        paragraphs = T.paragraphs(doc.text)
        spans: list[SizedInterval] = []
        pending: SizedInterval | None = None  # headings and fragments waiting for the paragraph they introduce
        for (s, e), n in zip(paragraphs, WORDS.sizes(doc.text, paragraphs), strict=True):
            if pending is not None and pending[2] + n <= self.theta:
                s, n = pending[0], pending[2] + n
                pending = None
            if pending is not None:
                spans.append(pending)
                pending = None
            if n > self.theta:
                spans.extend(split_sized(doc.text, s, e, WORDS, self.theta, STRUCTURE_LEVELS[1:], n))
            elif self._small(doc.text[s:e], n):
                pending = (s, e, n)
            else:
                spans.append((s, e, n))
        if pending is not None:
            if spans and spans[-1][2] + pending[2] <= self.theta and _whole(spans[-1], paragraphs):
                last = spans.pop()
                pending = (last[0], pending[1], last[2] + pending[2])
            spans.append(pending)
        return Chunking(build_chunks(doc, [(s, e) for s, e, _ in spans]))


def _whole(span: SizedInterval, paragraphs: list[tuple[int, int]]) -> bool:
    """Whether `span` is a run of whole paragraphs (not a piece of a long one)."""
    return any(s == span[0] for s, _ in paragraphs) and any(e == span[1] for _, e in paragraphs)
