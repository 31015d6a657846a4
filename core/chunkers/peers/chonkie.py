"""`chonkie-recursive`: Chonkie's RecursiveChunker at its defaults: its character tokenizer (nothing to load, so
nothing is fetched: Chonkie's tokenizers named by a string ignore HF_HUB_OFFLINE and can hang, chonkie #631),
chunk_size 2048, its default rules (paragraphs, sentences, punctuation, words, characters) and
min_characters_per_chunk 24. No token length: handed a tiktoken encoding, Chonkie 1.7 cuts inside a multi-byte
character and returns U+FFFD in its place (a chunk of CJK text that is no longer the document's). Chonkie gives each
chunk's start_index; each is checked against the text before use."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import MetadataPrefix, TitleRouting, check_range
from core.chunkers.registry import register
from core.schema.documents import Document

from ..snippets import library_snippet
from .base import PeerChunker, check_size


@register
@dataclass
class ChonkieRecursive(MetadataPrefix, TitleRouting, PeerChunker):
    """Chunks cover every character but whitespace (Chonkie keeps every character; the spans are trimmed), never
    overlapping; a chunk may end inside a word, where Chonkie's last rule cuts by character."""

    name = "chonkie-recursive"
    library = "chonkie"
    chunk_size: int = 2048
    min_characters_per_chunk: int = 24

    def validate(self) -> None:
        check_size(self.name, "chunk_size", self.chunk_size, "chars")
        check_range(self.name, "min_characters_per_chunk", self.min_characters_per_chunk, 1,
                    min(1000, self.chunk_size), "characters")

    def split(self, doc: Document) -> tuple[list[str], list[int | None]]:
        from chonkie import RecursiveChunker

        chunker = RecursiveChunker(tokenizer="character", chunk_size=self.chunk_size,
                                   min_characters_per_chunk=self.min_characters_per_chunk)
        chunks = chunker.chunk(doc.text)
        return [c.text for c in chunks], [c.start_index for c in chunks]

    def snippet(self) -> str:
        """RecursiveChunker on Chonkie's character tokenizer (nothing to fetch), with these sizes."""
        return library_snippet(self, ["from chonkie import RecursiveChunker"], [
            f'chunker = RecursiveChunker(tokenizer="character", chunk_size={self.chunk_size}, '
            f"min_characters_per_chunk={self.min_characters_per_chunk})",
            "chunks = [c.text for c in chunker.chunk(text)]"])
