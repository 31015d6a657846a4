"""Hostile files cost one worker process, never the server (`core.ingest.worker`): a few KB of nested PDF forms, a
DOCX that inflates into hundreds of MB, a page the size of a wall. Each is refused in one line naming the file and
the limit, and a normal upload made at the same time reads as usual."""

from __future__ import annotations

import threading

import pytest

from bench.hostile import headers_docx, make_nested_forms_pdf
from core.infra.errors import DocumentError
from core.ingest import documents
from core.ingest.documents import PdfLimits, load_bytes
from core.ingest.pdf import LOADER, MAX_PAGE_PIXELS
from core.ingest.worker import WorkerLimits, run_job
from core.outputs.pageview import PageViewError, load_page
from core.schema.documents import Document
from tests.support.docx_files import docx_bytes
from tests.support.pdfs import make_pdf

#: Seven levels of ten: one page that stands for ten million drawings, in 2.4 KB (PDFium aborts the process
#: that reads it when memory runs out).
FORM_BOMB_LEVELS = 7


def test_a_pdf_of_nested_forms_ends_its_worker_while_a_normal_upload_reads_beside_it():
    bomb = make_nested_forms_pdf(FORM_BOMB_LEVELS)
    assert len(bomb) < 3000
    outcome: list[BaseException] = []

    def read_bomb() -> None:
        try:
            load_bytes("forms.pdf", bomb)
        except DocumentError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_bomb)
    reader.start()
    normal = load_bytes("normal.pdf", make_pdf(["Clean the filter every two weeks."]))
    assert reader.is_alive(), "the normal upload waited for the hostile one"
    reader.join(timeout=120)
    assert normal.text == "Clean the filter every two weeks."
    assert len(outcome) == 1
    assert str(outcome[0]).startswith("forms.pdf: reading it needed more than the 1024 MB memory limit for one file")


def test_a_worker_past_its_wall_clock_is_killed():
    bomb = make_nested_forms_pdf(6)  # about 10 s and 1.7 GB uncapped
    with pytest.raises(DocumentError, match=r"^slow.pdf: reading it passed the 1-second limit for one file"):
        run_job("pdf_text", "slow.pdf", bomb, {"limits": {}}, WorkerLimits(memory=4 * 2**30, seconds=1))


def test_a_docx_of_many_small_members_that_inflate_far_is_refused_as_a_whole():
    data = headers_docx()  # 64 header parts, each under the per-member check, 16 MB in all
    with pytest.raises(DocumentError, match=r"^headers.docx: the DOCX is compressed \d+:1 as a whole, over the "
                                            r"100:1 limit \(refused as a likely zip bomb\)$"):
        load_bytes("headers.docx", data)


def test_a_docx_with_more_xml_than_one_document_holds_is_refused(monkeypatch):
    monkeypatch.setattr(documents, "MAX_DOCX_XML_BYTES", 4096)
    with pytest.raises(DocumentError, match=r"^big.docx: the DOCX holds \d+ KB of XML, over the 4 KB limit"):
        load_bytes("big.docx", docx_bytes("Press the power button."))


@pytest.mark.parametrize("name,data", [("long.txt", b"Clean the filter. " * 2000),
                                       ("long.docx", docx_bytes(*["Clean the filter. " * 100] * 20))])
def test_every_type_holds_its_text_to_the_character_limit(name, data):
    limits = PdfLimits(chars=10_000)
    with pytest.raises(DocumentError, match=rf"^{name}: 3\d,\d{{3}} characters, over the 10,000-character limit"):
        load_bytes(name, data, pdf_limits=limits)
    assert len(load_bytes(name, data).text) > 30_000


def test_a_page_past_the_pdf_formats_size_limit_is_refused_at_upload():
    with pytest.raises(DocumentError, match=r"^wall.pdf: page 1 is 30,000 x 30,000 points, over the PDF format's "
                                            r"14,400-point \(200-inch\) page size limit$"):
        load_bytes("wall.pdf", make_pdf(["A wall."], media=(30_000, 30_000)))


def test_the_page_view_draws_a_poster_sized_page_small():
    data = make_pdf(["A poster."], media=(14_400, 14_400))
    page = load_page(load_bytes("poster.pdf", data), data, 1)
    assert page.width * page.height <= MAX_PAGE_PIXELS
    assert len(page.png) < 1_000_000 and page.text == "A poster."


def test_a_page_that_exhausts_the_reader_is_the_page_views_own_error():
    bomb = make_nested_forms_pdf(FORM_BOMB_LEVELS)
    doc = Document("forms", "forms", "x", page_starts=[0], loader=LOADER)
    with pytest.raises(PageViewError, match="^forms: reading it needed more than the 1024 MB memory limit"):
        load_page(doc, bomb, 1)


def test_cached_pages_belong_to_their_pdf_not_to_its_text(tmp_path):
    """Two libraries may hold different PDFs of one text: each is shown its own page."""
    top, low = make_pdf(["Same text."], at=(72, 720)), make_pdf(["Same text."], at=(72, 100))
    doc_top, doc_low = load_bytes("a.pdf", top), load_bytes("a.pdf", low)
    assert doc_top.text == doc_low.text
    first, second = load_page(doc_top, top, 1), load_page(doc_low, low, 1)
    assert first.boxes != second.boxes and first.png != second.png
    for folder, data in (("one", top), ("two", low)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.pdf").write_bytes(data)
    from_files = [load_page(doc_top, tmp_path / folder / "a.pdf", 1) for folder in ("one", "two")]
    assert from_files[0].boxes == first.boxes and from_files[1].boxes == second.boxes


def test_each_jobs_answer_has_the_keys_its_answer_type_names():
    """`run_job`'s overloads type each job's answer (PdfTextAnswer, DocxTextAnswer, PagesAnswer): what a worker
    really sends back has exactly those keys, so the types the page view and the loaders read by are the answer's."""
    from dataclasses import asdict

    from core.ingest.answers import DocxTextAnswer, PageAnswer, PagesAnswer, PdfTextAnswer

    pdf = make_pdf(["Clean the filter every two weeks.", "E4: the sensor failed."])
    text, _ = run_job("pdf_text", "a.pdf", pdf, {"limits": asdict(PdfLimits())})
    assert set(text) == set(PdfTextAnswer.__annotations__) and len(text["starts"]) == 2
    assert isinstance(text["text"], str) and "sensor" in text["text"]
    docx, _ = run_job("docx_text", "a.docx", docx_bytes("Descale monthly."), {})
    assert set(docx) == set(DocxTextAnswer.__annotations__) and "Descale" in docx["text"]
    pages, pngs = run_job("pdf_page", "a.pdf", pdf, {"pages": [1], "scale": 1.0})
    assert set(pages) == set(PagesAnswer.__annotations__) and len(pages["pages"]) == 1
    page = pages["pages"][0]
    assert set(page) == set(PageAnswer.__annotations__) and page["png"] == len(pngs) > 0
    assert all(box is None or len(box) == 4 for box in page["boxes"])
