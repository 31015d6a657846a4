"""Chunks where they sit on a PDF page: each chunk's span turned into boxes over the lines it covers.

A span's characters are the document's own offsets, mapped through `core.ingest.pdf` to PDFium's characters and
their boxes, so a box holds exactly the span's characters. Whitespace is never drawn: PDFium generates most
spaces and every line end itself (they have no box), and a space it did draw says nothing about where a chunk
starts. So a chunk that begins with a space is drawn from its first visible character.

Boxes of one chunk are made line by line: consecutive characters join the current box while they sit on its line
(vertical overlap of half the smaller height) and follow it closely (a gap under `GAP_EMS` character heights);
a step back, a new line or a wide gap (a table's next column) opens a new box.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import ChunkLensError
from core.ingest import pdf as pdf_reader
from core.ingest.datasets import Question
from core.ingest.documents import Document
from core.ingest.library import Library
from core.model import Chunk

SCALE = 1.5  # 108 dpi: a US-letter page is 918 x 1188 pixels, sharp enough to read body text
GAP_EMS = 1.5  # wider than any word space, narrower than a table's column gap
CACHED_PAGES = 48

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels, y downwards


class PageViewError(ChunkLensError):
    """The page view cannot draw this document (not a PDF, its original is gone, or its text came from another
    loader)."""


@dataclass(frozen=True)
class Page:
    """One rendered page of a document: the image, and for every character of the document's text on it
    (from `start`) its box, or None for whitespace and generated characters."""

    doc_id: str
    number: int  # 1-based
    start: int  # the document offset of the page's first character
    text: str
    boxes: list[Box | None]
    width: int
    height: int
    png: bytes

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class PlacedSpan:
    """A chunk (or an evidence span) on one page: its boxes, and the span in document offsets."""

    label: str
    start: int
    end: int
    boxes: list[Box]
    chunk: Chunk | None = None


_cache: OrderedDict[tuple[str, int, float], Page] = OrderedDict()
_cache_lock = threading.Lock()


def can_show(doc: Document) -> bool:
    """A PDF whose text this loader wrote: its offsets are PDFium's."""
    return bool(doc.page_starts) and doc.loader == pdf_reader.LOADER


def load_page(doc: Document, data: bytes | Path, number: int, scale: float = SCALE) -> Page:
    """Page `number` (1-based) of `doc`, whose original PDF is `data` (its bytes, or its file: read only when the
    page is not cached); rendered once per document text, page and scale, then served from a small in-memory
    cache. PageViewError when the page's text is not the text the chunkers saw."""
    if not doc.page_starts:
        raise PageViewError(f"{doc.title}: not a PDF, so there are no pages to show")
    if doc.loader != pdf_reader.LOADER:
        raise PageViewError(f"{doc.title}: its text was read by an older PDF loader ({doc.loader or 'pypdf'}), so "
                            f"its offsets are not the page's; delete it and upload the PDF again to see its pages")
    if not 1 <= number <= len(doc.page_starts):
        raise PageViewError(f"{doc.title}: no page {number} (it has {len(doc.page_starts)})")
    key = (doc.fingerprint, number, scale)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    from pypdfium2 import PdfiumError

    try:
        layout, png = pdf_reader.page_layout(data.read_bytes() if isinstance(data, Path) else data, number - 1,
                                             scale)
    except (PdfiumError, IndexError) as exc:
        raise PageViewError(f"{doc.title}: page {number} could not be drawn ({exc})") from exc
    start = doc.page_starts[number - 1]
    if doc.text[start:start + len(layout.text)] != layout.text:
        raise PageViewError(f"{doc.title}: page {number} of the stored PDF no longer gives the text the chunkers "
                            "read; upload the PDF again")
    page = Page(doc.doc_id, number, start, layout.text, layout.boxes, layout.width, layout.height, png)
    with _cache_lock:
        _cache[key] = page
        while len(_cache) > CACHED_PAGES:
            _cache.popitem(last=False)
    return page


def span_boxes(page: Page, start: int, end: int) -> list[Box]:
    """The boxes of the document span [start, end) on this page, line by line ([] when it is not on it)."""
    lo, hi = max(start, page.start) - page.start, min(end, page.end) - page.start
    out: list[Box] = []
    cur: list[float] | None = None
    for i in range(lo, hi):
        box = page.boxes[i]
        if box is None or page.text[i].isspace():
            continue
        if cur is not None and _continues(cur, box):
            cur[0], cur[1], cur[2], cur[3] = min(cur[0], box[0]), min(cur[1], box[1]), max(cur[2], box[2]), max(
                cur[3], box[3])
            continue
        if cur is not None:
            out.append((cur[0], cur[1], cur[2], cur[3]))
        cur = list(box)
    if cur is not None:
        out.append((cur[0], cur[1], cur[2], cur[3]))
    return out


def _continues(cur: list[float], box: Box) -> bool:
    """Whether `box` (the next character) extends the line box `cur`."""
    height = min(cur[3] - cur[1], box[3] - box[1])
    overlap = min(cur[3], box[3]) - max(cur[1], box[1])
    if overlap < 0.5 * height:
        return False
    gap = box[0] - cur[2]
    return -0.5 * height <= gap <= GAP_EMS * max(box[3] - box[1], cur[3] - cur[1])


def _shift(doc: Document, source: Document | None) -> int | None:
    """Where `source` (a page's document) begins inside `doc` (the document chunks or questions refer to): 0 when
    they are the same, its segment's start when `doc` is a joined stream holding it, None otherwise."""
    if source is None or doc.doc_id == source.doc_id:
        return 0
    return next((s.start for s in doc.segments if s.doc_id == source.doc_id), None)


def place_chunks(page: Page, chunks: Sequence[Chunk], doc: Document,
                 source: Document | None = None) -> list[PlacedSpan]:
    """The chunks of a run that reach this page, with their boxes. `doc` is the document the chunks were cut
    from: the page's own document, or a joined stream holding it (then `source` is the page's document and
    offsets are moved through the stream's segments)."""
    shift = _shift(doc, source)
    if shift is None:
        return []
    out = []
    for c in chunks:
        if c.doc_id != doc.doc_id:
            continue
        start, end = c.start - shift, c.end - shift
        if end <= page.start or start >= page.end:
            continue
        boxes = span_boxes(page, start, end)
        if boxes:
            out.append(PlacedSpan(f"#{c.index}" + (f".{c.child}" if c.child else ""), start, end, boxes, c))
    return out


def evidence_spans(questions: Sequence[Question], doc: Document, source: Document | None = None
                   ) -> list[tuple[str, int, int]]:
    """Gold evidence of the questions on `source` (labelled with the question), in its own offsets."""
    shift = _shift(doc, source)
    if shift is None:
        return []
    return [(q.question, r.start - shift, r.end - shift) for q in questions for r in q.references
            if r.doc_id == doc.doc_id]


def place_spans(page: Page, spans: Sequence[tuple[str, int, int]]) -> list[PlacedSpan]:
    """Labelled document spans (gold evidence) that reach this page, with their boxes."""
    placed = [PlacedSpan(label, s, e, span_boxes(page, s, e))
              for label, s, e in spans if s < page.end and e > page.start]
    return [p for p in placed if p.boxes]


def viewable(library: Library) -> list[tuple[Document, Path]]:
    """The library's PDFs that the page view can draw, with their original files."""
    out = []
    for doc in library.documents():
        original = next((p for p in library.originals_of(doc.doc_id) if p.suffix == ".pdf"), None)
        if original is not None and can_show(doc):
            out.append((doc, original))
    return out
