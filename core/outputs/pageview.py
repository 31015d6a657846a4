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

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.infra.errors import ChunkLensError, DocumentError
from core.ingest import pdf as pdf_reader
from core.ingest import worker
from core.ingest.library import Library
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.questions import Question

SCALE = 1.5  # 108 dpi: a US-letter page is 918 x 1188 pixels, sharp enough to read body text
GAP_EMS = 1.5  # wider than any word space, narrower than a table's column gap
CACHED_PAGES = 48
DRAW_SECONDS = 60.0  # one page, start-up included: an ordinary page draws in a fraction of a second

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


_cache: OrderedDict[tuple[str, str, int, float], Page] = OrderedDict()
_cache_lock = threading.Lock()


def can_show(doc: Document) -> bool:
    """A PDF whose text this loader wrote: its offsets are PDFium's."""
    return bool(doc.page_starts) and doc.loader == pdf_reader.LOADER


def load_page(doc: Document, data: bytes | Path, number: int, scale: float = SCALE) -> Page:
    """Page `number` (1-based) of `doc`, whose original PDF is `data` (its bytes, or its file: read only when the
    page is not cached); see `load_pages`."""
    return load_pages(doc, data, [number], scale)[0]


def load_pages(doc: Document, data: bytes | Path, numbers: Sequence[int], scale: float = SCALE) -> list[Page]:
    """Pages `numbers` (1-based) of `doc`, whose original PDF is `data`: the ones not cached are drawn together in
    one worker process, then kept in a small in-memory cache keyed by the PDF itself (`_source_key`), the page and
    the scale. PageViewError when a page's text is not the text the chunkers saw, or it cannot be drawn."""
    if not doc.page_starts:
        raise PageViewError(f"{doc.title}: not a PDF, so there are no pages to show")
    if doc.loader != pdf_reader.LOADER:
        raise PageViewError(f"{doc.title}: its text was read by an older PDF loader ({doc.loader or 'pypdf'}), so "
                            f"its offsets are not the page's; delete it and upload the PDF again to see its pages")
    for number in numbers:
        if not 1 <= number <= len(doc.page_starts):
            raise PageViewError(f"{doc.title}: no page {number} (it has {len(doc.page_starts)})")
    source = _source_key(data)
    found: dict[int, Page] = {}
    with _cache_lock:
        for number in numbers:
            if (key := (source, doc.fingerprint, number, scale)) in _cache:
                _cache.move_to_end(key)
                found[number] = _cache[key]
    missing = sorted({n for n in numbers if n not in found})
    if missing:
        drawn = _draw(doc, data.read_bytes() if isinstance(data, Path) else data, missing, scale)
        for number, (layout, png) in zip(missing, drawn, strict=True):
            found[number] = _page(doc, number, layout, png)
        with _cache_lock:
            for number in missing:
                _cache[(source, doc.fingerprint, number, scale)] = found[number]
            while len(_cache) > CACHED_PAGES:
                _cache.popitem(last=False)
    return [found[n] for n in numbers]


def _page(doc: Document, number: int, layout: pdf_reader.PageLayout, png: bytes) -> Page:
    """A drawn page, once its text is checked against the text the chunkers read."""
    start = doc.page_starts[number - 1]
    if doc.text[start:start + len(layout.text)] != layout.text:
        raise PageViewError(f"{doc.title}: page {number} of the stored PDF no longer gives the text the chunkers "
                            "read; upload the PDF again")
    return Page(doc.doc_id, number, start, layout.text, layout.boxes, layout.width, layout.height, png)


def _source_key(data: bytes | Path) -> str:
    """What identifies the PDF a page is drawn from: its file (path, size and time of change: each library keeps its
    own files), or its bytes' digest. Never the text alone: two libraries may hold different PDFs of one text."""
    if isinstance(data, Path):
        info = data.stat()
        return f"{data.resolve()}:{info.st_size}:{info.st_mtime_ns}"
    return hashlib.sha256(data).hexdigest()


def _draw(doc: Document, data: bytes, numbers: list[int],
          scale: float) -> list[tuple[pdf_reader.PageLayout, bytes]]:
    """Pages `numbers` drawn in one worker process (`core.ingest.worker`): a page that exhausts PDFium, or takes too
    long, is the page view's own error and costs the server nothing."""
    try:
        result, pngs = worker.run_job("pdf_page", doc.title, data, {"pages": [n - 1 for n in numbers],
                                                                     "scale": scale},
                                      worker.WorkerLimits(seconds=DRAW_SECONDS * len(numbers)))
    except DocumentError as exc:
        raise PageViewError(str(exc)) from exc
    out: list[tuple[pdf_reader.PageLayout, bytes]] = []
    at = 0
    for page in result["pages"]:
        boxes = [None if box is None else (box[0], box[1], box[2], box[3]) for box in page["boxes"]]
        layout = pdf_reader.PageLayout(page["text"], boxes, int(page["width"]), int(page["height"]))
        out.append((layout, pngs[at:at + int(page["png"])]))
        at += int(page["png"])
    return out


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
