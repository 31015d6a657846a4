"""`langchain-recursive`: LangChain's RecursiveCharacterTextSplitter (langchain-text-splitters), at the class's
documented defaults: chunk_size 4000 and chunk_overlap 200, counted in characters (`len`), separators
["\\n\\n", "\\n", " ", ""], keep_separator True, strip_whitespace True. `length=tokens` counts both in tiktoken
tokens instead (cl100k_base, from the project's packaged files: `from_tiktoken_encoder` would load GPT-2's BPE from
the network, and refuses text holding a special token).

Spans are placed from the chunk texts (`core.chunkers.peers.spans`), not from `add_start_index`, which is wrong on
repeated text (langchain #21475)."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import MetadataPrefix, TitleRouting
from core.chunkers.registry import register
from core.schema.documents import Document

from ..snippets import TOKEN_COUNTER, library_snippet
from .base import Length, PeerChunker, check_sizes, length_function
from .spans import Overlap


@register
@dataclass
class LangChainRecursive(MetadataPrefix, TitleRouting, PeerChunker):
    """Chunks overlap by up to `chunk_overlap`; together they cover every character but whitespace."""

    name = "langchain-recursive"
    library = "langchain-text-splitters"
    chunk_size: int = 4000
    chunk_overlap: int = 200
    length: Length = "chars"

    def validate(self) -> None:
        check_sizes(self.name, "chunk_size", self.chunk_size, self.chunk_overlap, self.length)

    def overlap_bound(self) -> Overlap:
        return Overlap(self.chunk_overlap, self.length)

    def split(self, doc: Document) -> tuple[list[str], None]:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap,
                                                  length_function=length_function(self.length))
        return splitter.split_text(doc.text), None

    def snippet(self) -> str:
        """RecursiveCharacterTextSplitter with these sizes; for tokens, tiktoken's cl100k_base as the length."""
        tokens = self.length == "tokens"
        counter = ", length_function=count_tokens" if tokens else ""
        return library_snippet(self, [*(["import tiktoken"] if tokens else []),
                                      "from langchain_text_splitters import RecursiveCharacterTextSplitter"], [
            *(TOKEN_COUNTER if tokens else ()),
            f"splitter = RecursiveCharacterTextSplitter(chunk_size={self.chunk_size}, "
            f"chunk_overlap={self.chunk_overlap}{counter})",
            "chunks = splitter.split_text(text)"])
