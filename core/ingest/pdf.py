"""PDFs through PDFium (pypdfium2): one library for the text the chunkers read, the place of every character on
the page, and the page as an image.

One library for all three is what makes the page view exact. A character's offset in a document's text maps to
one PDFium character index (`PageText.chars`), and that index has a box on the page; a second library for text
would need an alignment that could only ever be approximately right. pypdfium2 is Apache-2.0 / BSD-3 licensed
(PyMuPDF's AGPL does not suit this project) and reads a page of text in about 3 ms, against 30 ms for pypdf.

PDFium is not thread-safe, not even across documents, and Streamlit serves every session from its own thread:
every call into it holds `LOCK`.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.infra.errors import DocumentError
from core.ingest.answers import PageAnswer, PagesAnswer

if TYPE_CHECKING:  # pypdfium2 itself is imported where a PDF is read; it ships no types, so these name its classes
    from pypdfium2 import PdfDocument, PdfTextPage

#: Stored with every PDF's text (`Document.loader`). Text from another loader (pypdf, before this one) has other
#: offsets, so the page view refuses it and asks for the file to be read again; bump this when the text changes.
LOADER = "pdfium:1"

LOCK = threading.RLock()

#: The page view's largest image: 4 million pixels is a US-letter page at 230 dpi (the view draws 108 dpi), and at
#: most 16 MB of RGBA while it is drawn. A poster-sized page is drawn smaller rather than at gigabytes.
MAX_PAGE_PIXELS = 4_000_000

#: How PDFium marks a hyphen at a line end that splits a word over two lines (it leaves out the line break after
#: it): 0x02 character by character, U+FFFE in its bulk text. The loader drops it, so "manip-" + "ulation" reads
#: as "manipulation", for BM25, the embedder and a person searching; the hyphen's box is simply not drawn.
_LINE_END_HYPHENS = (0x02, 0xFFFE)


@dataclass(frozen=True)
class PageText:
    """A page's text as the loader keeps it, and for each of its characters the PDFium character index it came
    from (line ends "\\r\\n" become one "\\n", which keeps the index of the "\\r")."""

    text: str
    chars: list[int]


@contextmanager
def open_pdf(data: bytes) -> Iterator[PdfDocument]:
    """The PDF as a pypdfium2 `PdfDocument`, under `LOCK`, closed afterwards. PDFium's own errors
    (`pypdfium2.PdfiumError`: damaged, encrypted with a password) pass through."""
    import pypdfium2 as pdfium

    with LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            yield pdf
        finally:
            pdf.close()


def page_text(textpage: PdfTextPage) -> PageText:
    """The text of one PDFium text page, character by character (PDFium's bulk text call may drop or insert
    characters, which would shift every offset after them)."""
    import pypdfium2.raw as raw

    handle = textpage.raw
    out: list[str] = []
    chars: list[int] = []
    n = textpage.count_chars()
    i = 0
    while i < n:
        code = raw.FPDFText_GetUnicode(handle, i)
        if code == 0x0D:  # "\r", "\r\n" -> "\n"
            out.append("\n")
            chars.append(i)
            if i + 1 < n and raw.FPDFText_GetUnicode(handle, i + 1) == 0x0A:
                i += 1
        elif code in _LINE_END_HYPHENS:
            pass
        elif 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            out.append("\ufffd")
            chars.append(i)
        else:
            out.append(chr(code))
            chars.append(i)
        i += 1
    text = "".join(out)
    lead = len(text) - len(text.lstrip("\n"))
    kept = text.strip("\n")
    return PageText(kept, chars[lead:lead + len(kept)])


def outline(pdf: PdfDocument) -> list[tuple[int, int, str]]:
    """(page index, level from 1, title) of every bookmark; an outline PDFium cannot follow is left out."""
    out: list[tuple[int, int, str]] = []
    try:
        for mark in pdf.get_toc():
            dest = mark.get_dest()
            page = dest.get_index() if dest is not None else None
            title = " ".join((mark.get_title() or "").split())
            if page is not None and title:
                out.append((page, mark.level + 1, title[:200]))
    except Exception:  # noqa: BLE001 - damaged outlines fail in many ways; the text is what matters
        return []
    return out


@dataclass(frozen=True)
class PageLayout:
    """One page: its text (as the loader keeps it), each character's box in image pixels (None for a character
    PDFium drew nothing for: a space or line end it generated), and the rendered image's size."""

    text: str
    boxes: list[tuple[float, float, float, float] | None]
    width: int
    height: int


def fit_scale(width: float, height: float, scale: float) -> float:
    """`scale`, lowered so that a page of `width` x `height` points renders to at most MAX_PAGE_PIXELS pixels."""
    area = max(width, 1.0) * max(height, 1.0)
    return min(scale, math.sqrt(MAX_PAGE_PIXELS / area))


def page_layout(data: bytes, page_no: int, scale: float) -> tuple[PageLayout, bytes]:
    """Page `page_no` (0-based) of a PDF: its layout, and the page rendered at `scale` (1 = 72 dpi; lower for a page
    so large that it would pass MAX_PAGE_PIXELS) as PNG."""
    import pypdfium2.raw as raw

    with open_pdf(data) as pdf:
        page = pdf[page_no]
        textpage = page.get_textpage()
        found = page_text(textpage)
        page_width, page_height = page.get_size()
        image = page.render(scale=fit_scale(page_width, page_height, scale)).to_pil()
        width, height = image.size
        boxes: list[tuple[float, float, float, float] | None] = []
        for index in found.chars:
            left, bottom, right, top = textpage.get_charbox(index)
            if right - left <= 0 or top - bottom <= 0:
                boxes.append(None)
                continue
            x0, y0 = _to_pixels(raw, page, width, height, left, top)
            x1, y1 = _to_pixels(raw, page, width, height, right, bottom)
            boxes.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
        png = io.BytesIO()
        image.save(png, format="PNG", optimize=False, compress_level=1)
    return PageLayout(found.text, boxes, width, height), png.getvalue()


def page_job(name: str, data: bytes, options: dict) -> tuple[PagesAnswer, bytes]:
    """The worker's side of the page view (`core.ingest.worker`): pages `options["pages"]` (0-based) at
    `options["scale"]`, as JSON-able layouts (each with its PNG's length) and the PNGs one after another."""
    from pypdfium2 import PdfiumError

    layouts: list[PageAnswer] = []
    pngs: list[bytes] = []
    for number in options["pages"]:
        try:
            layout, png = page_layout(data, int(number), float(options["scale"]))
        except (PdfiumError, IndexError) as exc:
            raise DocumentError(f"{name}: page {int(number) + 1} could not be drawn ({exc})") from exc
        layouts.append({"text": layout.text, "boxes": layout.boxes, "width": layout.width, "height": layout.height,
                        "png": len(png)})
        pngs.append(png)
    return {"pages": layouts}, b"".join(pngs)


def _to_pixels(raw, page, width: int, height: int, x: float, y: float) -> tuple[float, float]:
    """A point of page space in the rendered image's pixels, with PDFium's own transform (crop box, rotation)."""
    import ctypes

    dx, dy = ctypes.c_int(), ctypes.c_int()
    raw.FPDF_PageToDevice(page.raw, 0, 0, width, height, 0, x, y, dx, dy)
    return float(dx.value), float(dy.value)
