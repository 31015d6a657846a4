"""One chunk per PDF page: the strategy NVIDIA's chunking study found the most consistent (the best mean answer
accuracy with the lowest spread), here on the same bench as every other chunker.

- A page's chunk is the exact text of that page (`Document.page_starts`, or a joined stream's `Segment.page_starts`
  for each PDF in it), trimmed of leading and trailing whitespace like every other chunker's. So the chunks cover
  every character but the whitespace between pages (and between a stream's documents), never overlap, and each lies
  on its own page: the export's `page` / `page_end` and the page view give pages 1..N, read from the offsets as
  for any chunker.
- A page with no text (blank, or a scan) yields no chunk; the page numbers of the others do not move.
- No size cap: a page is the unit, however long. What the embedder does not read of a long page is greyed on
  Chunk & compare and counted in the bench's `unread_share`, as for any chunker.
- A document without pages (TXT, Markdown, DOCX, a QA set's corpus, or such a part of a joined stream) is kept
  whole as one chunk, and the run says so in one line (`Chunking.trace["notes"]`, shown by Chunk & compare and
  printed by `core bench` and `core export`). It is not refused: a refusal is a ChunkLensError, which fails the
  whole chunker for the run (the bench has no per-document failure), so one text file in a library of PDFs would
  cost every PDF its page chunks; a whole-document chunk is the page strategy's honest limit there, and the line
  says what happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from core import text as T
from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunking, add_note
from core.schema.documents import Document

Span = tuple[int, int]


@register
@dataclass
class PageChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "page"

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        parts: list[tuple[str, str, Sequence[int], int, int]]  # source, title, page starts, start, end
        if doc.page_starts or not doc.segments:
            parts = [(doc.source, doc.title, doc.page_starts, 0, len(doc.text))]
        else:  # a joined stream: each source document's own pages, in its own offsets
            parts = [("", s.title, s.page_starts, s.start, s.end) for s in doc.segments]
        spans: list[Span] = []
        trace: JsonObject = {"kind": "page"}
        for source, title, starts, start, end in parts:
            own = _pages(doc.text, starts, start, end)
            spans += own
            if own and not starts:  # a blank document has nothing to keep, and nothing to say
                name = _name(source, title)
                add_note(trace, f"'{name}' has no pages (only a PDF has them); kept whole as one chunk")
        return Chunking(build_chunks(doc, spans), trace)


def _pages(text: str, starts: Sequence[int], base: int, end: int) -> list[Span]:
    """Each page's trimmed span in `text[base:end]`, pages starting at `base + starts[i]` (the first page at `base`:
    text before the first start is the first page's, as `Document.page_at` counts it); without pages, the whole
    range. Empty pages give nothing."""
    edges = [base] + [base + s for s in starts[1:]] + [end]
    spans = [T.strip_span(text, a, b) for a, b in zip(edges, edges[1:], strict=False)]
    return [(a, b) for a, b in spans if a < b]


def _name(source: str, title: str) -> str:
    """How the line names a document: its file name when it is an uploaded file (titled by the file's stem), else
    its title (a QA set's document, whose source is the set's corpus.jsonl, or a part of a joined stream)."""
    path = PurePath(source)
    return path.name if source and path.stem == title else title
