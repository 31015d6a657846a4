"""The page view draws each chunk over exactly its own characters, on two real PDF manuals (tests/fixtures/debian).

For every chunk of two chunkers and every page the chunk reaches: each visible character of the chunk's span lies
in one of the chunk's boxes (its box's centre does), and no visible character of the page outside the span does.
Whitespace is left out on both sides: PDFium generates most spaces and all line ends without a box, so they
have no place on the page to check (core/outputs/pageview.py says how boxes are built).
"""

from __future__ import annotations

import pytest

from core.chunkers.registry import make_chunker
from core.infra.errors import ChunkLensError
from core.ingest import pdf as pdf_reader
from core.ingest.documents import join_documents, load_file
from core.outputs.pageview import Page, PageViewError, load_page, load_pages, place_chunks, place_spans, span_boxes
from core.schema.documents import Document
from tests.support.data import ROOT

DEBIAN = ROOT / "tests" / "fixtures" / "debian"


def _inside(box, boxes) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(b[0] <= x <= b[2] and b[1] <= y <= b[3] for b in boxes)


@pytest.fixture(scope="module", params=["libtasn1.pdf", "avrdude.pdf"])
def manual(request) -> tuple[Document, bytes]:
    path = DEBIAN / request.param
    return load_file(path), path.read_bytes()


@pytest.fixture(scope="module")
def every_page(manual) -> list[Page]:
    """Every page of the manual, drawn once for the module (in one worker process)."""
    doc, data = manual
    return load_pages(doc, data, range(1, len(doc.page_starts) + 1))


@pytest.mark.parametrize("spec", ["naive-500t", "recursive"])
def test_every_chunks_boxes_cover_exactly_the_characters_of_its_span(manual, every_page, spec):
    doc, data = manual
    chunks = make_chunker(spec).chunk(doc).chunks
    pages = every_page
    checked = 0
    for page in pages:
        visible = [i for i, box in enumerate(page.boxes) if box is not None and not page.text[i].isspace()]
        for placed in place_chunks(page, chunks, doc):
            lo, hi = placed.start - page.start, placed.end - page.start
            for i in visible:
                assert _inside(page.boxes[i], placed.boxes) == (lo <= i < hi), (
                    spec, page.number, placed.label, i, page.text[i], lo, hi)
                checked += 1
    assert checked > 10_000
    first = pages[0]
    assert place_chunks(first, chunks, doc), "chunks on page 1"


def test_the_page_text_is_the_documents_text_and_the_image_is_a_png(manual):
    doc, data = manual
    page = load_page(doc, data, 2)
    assert page.text == doc.text[doc.page_starts[1]:doc.page_starts[1] + len(page.text)]
    assert page.png.startswith(b"\x89PNG") and page.width > 800 and page.height > 800
    assert load_page(doc, data, 2) is page  # cached


def test_a_chunk_across_a_page_break_is_drawn_on_both_pages():
    doc = load_file(DEBIAN / "libtasn1.pdf")
    data = (DEBIAN / "libtasn1.pdf").read_bytes()
    start = doc.page_starts[5] - 40
    p5, p6 = load_page(doc, data, 5), load_page(doc, data, 6)
    assert span_boxes(p5, start, start + 80) and span_boxes(p6, start, start + 80)
    assert doc.pages_of(start, start + 80) == (5, 6)


def test_chunks_of_a_joined_stream_are_drawn_on_their_source_pages():
    doc = load_file(DEBIAN / "libtasn1.pdf")
    other = load_file(DEBIAN / "avrdude.pdf")
    stream = join_documents([other, doc])
    data = (DEBIAN / "libtasn1.pdf").read_bytes()
    own = place_chunks(load_page(doc, data, 3), make_chunker("naive-500t").chunk(doc).chunks, doc)
    page = load_page(doc, data, 3)
    joined = place_chunks(page, make_chunker("recursive").chunk(stream).chunks, stream, source=doc)
    assert own and joined
    assert all(page.start <= p.end and p.start <= page.end for p in joined)
    gold = place_spans(page, [("evidence", page.start + 10, page.start + 60)])
    assert len(gold) == 1 and gold[0].boxes


def test_text_from_another_loader_or_a_changed_pdf_is_refused_with_a_reason():
    doc = load_file(DEBIAN / "libtasn1.pdf")
    data = (DEBIAN / "libtasn1.pdf").read_bytes()
    old = Document(doc.doc_id, doc.title, doc.text, page_starts=doc.page_starts)  # stored before `loader` existed
    with pytest.raises(PageViewError, match="read by an older PDF loader .*upload the PDF again"):
        load_page(old, data, 1)
    changed = Document(doc.doc_id, doc.title, "x" + doc.text, page_starts=doc.page_starts, loader=pdf_reader.LOADER)
    with pytest.raises(PageViewError, match="no longer gives the text the chunkers read"):
        load_page(changed, data, 1)
    with pytest.raises(PageViewError, match="no page 99 \\(it has 36\\)"):
        load_page(doc, data, 99)
    text = Document("t", "notes", "plain text")
    with pytest.raises(ChunkLensError, match="not a PDF"):
        load_page(text, b"", 1)
