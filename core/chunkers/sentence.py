"""Whole sentences packed up to a token budget, optionally repeating the last sentences of a chunk at the start
of the next. A sentence longer than the budget is split on words (then token windows)."""

from __future__ import annotations

from dataclasses import dataclass

from core import text as T
from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_range, check_tokens
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.chunkers.splitting import TOKENS, pack, split_to_cap
from core.schema.chunks import Chunking
from core.schema.documents import Document
from core.schema.spans import Interval

#: the most sentences one chunk repeats from the one before: each repeated sentence is embedded again per chunk
MAX_OVERLAP_SENTENCES = 8


@register
@dataclass
class SentenceChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "sentence"
    version = 2  # an overlap never makes a chunk that lies inside the one before
    max_tokens: int = 256
    overlap_sentences: int = 0

    def validate(self) -> None:
        check_tokens(self.name, "max_tokens", self.max_tokens)
        check_range(self.name, "overlap_sentences", self.overlap_sentences, 0, MAX_OVERLAP_SENTENCES, "sentences",
                    "more repeats most of the text in every chunk")

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        units = sentence_units(doc.text, self.max_tokens)
        if not self.overlap_sentences:
            return Chunking(build_chunks(doc, pack(doc.text, units, TOKENS, self.max_tokens)))
        return Chunking(build_chunks(doc, _pack_with_overlap(doc.text, units, self.max_tokens, self.overlap_sentences)))


def sentence_units(text: str, cap: int) -> list[Interval]:
    """Sentences, each split further only when it alone is over `cap` tokens."""
    units: list[Interval] = []
    for s, e in T.sentences(text):
        units.extend(split_to_cap(text, s, e, TOKENS, cap, (T.words,)))
    return units


def _pack_with_overlap(text: str, units: list[Interval], cap: int, overlap: int) -> list[Interval]:
    spans: list[Interval] = []
    i = 0
    while i < len(units):
        j = i + 1
        while j < len(units) and TOKENS.size(text, units[i][0], units[j][1]) <= cap:
            j += 1
        spans.append((units[i][0], units[j - 1][1]))
        if j >= len(units):
            break
        i = max(j - overlap, i + 1)
        # repeat only as many sentences as fit beside the next new one: a chunk always adds a sentence
        while i < j and TOKENS.size(text, units[i][0], units[j][1]) > cap:
            i += 1
    return spans
