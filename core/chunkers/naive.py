"""CHOP's Naive-500T baseline: fixed windows of tiktoken tokens with overlap."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, check_overlap, check_tokens, token_window_chunks
from core.chunkers.registry import register
from core.chunkers.snippets import library_snippet
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

    def snippet(self) -> str:
        """LangChain's TokenTextSplitter cuts the same windows: `size` tokens of the whole text's cl100k_base
        tokens, a new one every `size - overlap` (langchain_text_splitters.base.split_text_on_tokens; the same
        chunks on the sample set, `tests/unit/test_snippets.py`). It decodes each window, so its chunks keep their
        edge whitespace and a character cut between two tokens comes out as U+FFFD; ChunkLens trims the edges and
        cuts at the character's start."""
        return library_snippet(self, ["from langchain_text_splitters import TokenTextSplitter"], [
            f"# the windows of ChunkLens's {self.name}; strip each chunk's edges to get its chunk texts",
            f'splitter = TokenTextSplitter(encoding_name="cl100k_base", chunk_size={self.size}, '
            f"chunk_overlap={self.overlap}, disallowed_special=())",
            "chunks = [c.strip() for c in splitter.split_text(text) if c.strip()]"])
