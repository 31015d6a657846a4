"""`text-splitter`: semantic-text-splitter's TextSplitter, and its MarkdownSplitter for a Markdown document. The
library has no default size: `capacity` is 1000 characters, the size its README's first example uses; `overlap` 0
and `trim` True are the library's defaults. `length=tokens` counts both in tiktoken tokens (cl100k_base, from the
project's packaged files, handed to `from_callback`: the library's own `from_tiktoken_model` is not used).

`markdown=auto` takes the Markdown splitter for a file named .md or .markdown, or a text with Markdown headings (a
QA set's corpus.jsonl keeps no file name); `on` and `off` force it. The library's `chunk_indices` gives each chunk's
character offset; each is checked against the text before it is used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from core.chunkers.base import MetadataPrefix, TitleRouting
from core.chunkers.headers import markdown_headings
from core.chunkers.registry import register
from core.infra.errors import ConfigError
from core.schema.documents import Document

from ..snippets import TOKEN_COUNTER, library_snippet
from .base import Length, PeerChunker, check_sizes, length_function
from .spans import Overlap

Markdown = Literal["auto", "on", "off"]
MARKDOWN_MODES: tuple[Markdown, ...] = get_args(Markdown)
_MARKDOWN_SUFFIXES = (".md", ".markdown")


def is_markdown(doc: Document) -> bool:
    """A Markdown file by its name, or a text with at least one Markdown heading."""
    named = any(name.lower().endswith(_MARKDOWN_SUFFIXES) for name in (doc.source, doc.doc_id, doc.title))
    return named or bool(markdown_headings(doc.text))


@register
@dataclass
class TextSplitterChunker(MetadataPrefix, TitleRouting, PeerChunker):
    """Chunks cover every character but whitespace; with `overlap` they share up to that much."""

    name = "text-splitter"
    library = "semantic-text-splitter"
    capacity: int = 1000
    overlap: int = 0
    length: Length = "chars"
    markdown: Markdown = "auto"

    def validate(self) -> None:
        check_sizes(self.name, "capacity", self.capacity, self.overlap, self.length)
        if self.markdown not in MARKDOWN_MODES:
            raise ConfigError(f"{self.name}: markdown must be one of {', '.join(MARKDOWN_MODES)} "
                              f"(got '{self.markdown}')")

    def overlap_bound(self) -> Overlap:
        return Overlap(self.overlap, self.length)

    def splitter(self, doc: Document) -> Any:
        from semantic_text_splitter import MarkdownSplitter, TextSplitter

        kind = MarkdownSplitter if self.markdown == "on" or (self.markdown == "auto" and is_markdown(doc)) \
            else TextSplitter
        if self.length == "tokens":
            return kind.from_callback(length_function("tokens"), self.capacity, overlap=self.overlap)
        return kind(self.capacity, overlap=self.overlap)

    def split(self, doc: Document) -> tuple[list[str], list[int | None]]:
        found = self.splitter(doc).chunk_indices(doc.text)
        return [text for _, text in found], [start for start, _ in found]

    def snippet(self) -> str:
        """TextSplitter or MarkdownSplitter of this capacity and overlap (for tokens, on tiktoken's cl100k_base
        counts); with markdown=auto the user says which their text is, as ChunkLens decides it per document."""
        tokens = self.length == "tokens"
        if self.markdown == "auto":
            names, choose = "MarkdownSplitter, TextSplitter", [
                "# markdown=auto: ChunkLens takes MarkdownSplitter for a .md file or a text with Markdown headings",
                "is_markdown = False", "kind = MarkdownSplitter if is_markdown else TextSplitter"]
        else:
            names = "MarkdownSplitter" if self.markdown == "on" else "TextSplitter"
            choose = [f"kind = {names}  # markdown={self.markdown}"]
        build = (f"kind.from_callback(count_tokens, {self.capacity}, overlap={self.overlap})" if tokens
                 else f"kind({self.capacity}, overlap={self.overlap})")
        return library_snippet(self, [*(["import tiktoken"] if tokens else []),
                                      f"from semantic_text_splitter import {names}"], [
            *(TOKEN_COUNTER if tokens else ()), *choose, f"splitter = {build}", "chunks = splitter.chunks(text)"])
