"""`chonkie-recursive`: Chonkie's RecursiveChunker at its defaults: its character tokenizer (nothing to load, so
nothing is fetched: Chonkie's tokenizers named by a string ignore HF_HUB_OFFLINE and can hang, chonkie #631),
chunk_size 2048, its default rules (paragraphs, sentences, punctuation, words, characters) and
min_characters_per_chunk 24. No token length: handed a tiktoken encoding, Chonkie 1.7 cuts inside a multi-byte
character and returns U+FFFD in its place (a chunk of CJK text that is no longer the document's). Chonkie gives each
chunk's start_index; each is checked against the text before use.

`chonkie-semantic`: Chonkie's SemanticChunker at its defaults (threshold 0.8, chunk_size 2048, similarity_window 3,
min_sentences_per_chunk 1, min_characters_per_sentence 24, its sentence delimiters) but for its model: it is handed
the run's embedder (the bundled MiniLM by default, `chonkie_embedding.ChunkLensEmbeddings`) instead of its default
model2vec model, which it would download, and counts chunk_size in characters with its character tokenizer (named
by its model, Chonkie would take the model's tokenizer, loaded by name)."""

from __future__ import annotations

from dataclasses import dataclass

from core.chunkers.base import MetadataPrefix, TitleRouting, check_range
from core.chunkers.registry import register
from core.chunkers.semantic import MAX_BUFFER
from core.schema.documents import Document

from ..snippets import library_snippet
from .base import MINILM, PeerChunker, check_size


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


#: the widest comparison window, in sentences: as wide as `semantic`'s widest (MAX_BUFFER either side and itself);
#: each sentence is embedded again with every window it is in
MAX_WINDOW = 2 * MAX_BUFFER + 1


@register
@dataclass
class ChonkieSemantic(MetadataPrefix, TitleRouting, PeerChunker):
    """Chunks of whole sentences (Chonkie's delimiters), split where the similarity of a sentence to the window
    before it dips below `threshold`, at most `chunk_size` characters unless one sentence is longer; never
    overlapping, covering every character but whitespace."""

    name = "chonkie-semantic"
    library = "chonkie"
    needs = ("embedder",)
    chunk_size: int = 2048
    threshold: float = 0.8
    similarity_window: int = 3

    def validate(self) -> None:
        check_size(self.name, "chunk_size", self.chunk_size, "chars")
        check_range(self.name, "threshold", self.threshold, 0.01, 0.99)
        check_range(self.name, "similarity_window", self.similarity_window, 1, MAX_WINDOW, "sentences",
                    "each sentence is embedded again with every window it is in")

    def split(self, doc: Document) -> tuple[list[str], list[int | None]]:
        from chonkie import SemanticChunker

        from .chonkie_embedding import ChunkLensEmbeddings

        chunker = SemanticChunker(embedding_model=ChunkLensEmbeddings(self.context.embedder),
                                  chunk_size=self.chunk_size, threshold=self.threshold,
                                  similarity_window=self.similarity_window)
        chunks = chunker.chunk(doc.text)
        return [c.text for c in chunks], [c.start_index for c in chunks]

    def snippet(self) -> str:
        """SemanticChunker with these parameters and the bundled model, named as Chonkie names it."""
        return library_snippet(self, ["from chonkie import SemanticChunker"], [
            "# named by its model, Chonkie counts chunk_size in the model's word pieces (ChunkLens: in characters)",
            f"chunker = SemanticChunker(embedding_model=\"{MINILM}\", chunk_size={self.chunk_size}, "
            f"threshold={self.threshold}, similarity_window={self.similarity_window})",
            "chunks = [c.text for c in chunker.chunk(text)]"])
