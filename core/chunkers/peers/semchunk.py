"""`semchunk`: semchunk's chunker (isaacus-dev/semchunk) with the project's tiktoken as its token counter
(cl100k_base, from packaged files). semchunk has no default size for a counter it is handed; 512 tokens is the size
its README's examples use. `overlap` (tokens, default none, semchunk's own) is passed through. semchunk returns
offsets (`offsets=True`); each is checked against the text before it is used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from core.chunkers.base import MetadataPrefix, TitleRouting
from core.chunkers.registry import register
from core.schema.documents import Document
from core.tokens import count_tokens

from ..snippets import TOKEN_COUNTER, library_snippet
from .base import PeerChunker, check_sizes
from .spans import Overlap


@register
@dataclass
class SemchunkChunker(MetadataPrefix, TitleRouting, PeerChunker):
    """Chunks cover every character but whitespace; with `overlap` they share up to that many tokens."""

    name = "semchunk"
    library = "semchunk"
    chunk_size: int = 512
    overlap: int = 0

    def validate(self) -> None:
        check_sizes(self.name, "chunk_size", self.chunk_size, self.overlap, "tokens")

    def overlap_bound(self) -> Overlap:
        return Overlap(None if self.overlap else 0)

    def split(self, doc: Document) -> tuple[list[str], list[int | None]]:
        import semchunk

        chunker = semchunk.chunkerify(count_tokens, chunk_size=self.chunk_size)
        # one text with offsets=True gives (chunks, spans); semchunk types its return as the union of every shape
        texts, offsets = cast(tuple[list[str], list[tuple[int, int]]],
                              chunker(doc.text, offsets=True, overlap=self.overlap or None))
        return list(texts), [start for start, _ in offsets]

    def snippet(self) -> str:
        """semchunk's chunker of this size on tiktoken's cl100k_base counts, with the overlap when there is one."""
        overlap = f", overlap={self.overlap}" if self.overlap else ""
        return library_snippet(self, ["import semchunk", "import tiktoken"], [
            *TOKEN_COUNTER, f"chunker = semchunk.chunkerify(count_tokens, chunk_size={self.chunk_size})",
            f"chunks = chunker(text{overlap})"])
