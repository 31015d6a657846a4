"""Loading files to text: every supported type, every kind of bad input, and joined streams."""

from __future__ import annotations

import io

import pytest

from core.documents import MAX_FILE_BYTES, Document, join_documents, load_bytes, load_file
from core.errors import DocumentError
from tests.pdfs import encrypt_pdf, make_pdf


def test_text_and_markdown_keep_their_text():
    doc = load_bytes("Manual 225B.md", b"# Title\r\n\r\nClean the filter.\r\n")
    assert doc.text == "# Title\n\nClean the filter.\n"
    assert doc.doc_id == "Manual-225B" and doc.title == "Manual 225B"


def test_utf16_and_legacy_encodings_decode():
    assert load_bytes("a.txt", "Température 25 °C".encode("utf-16")).text == "Température 25 °C"
    assert load_bytes("b.txt", "Température".encode("cp1252")).text == "Température"


def test_pdf_pages_become_offsets():
    doc = load_bytes("m.pdf", make_pdf(["Page one text.", "Page two text."]))
    assert doc.text == "Page one text.\n\nPage two text."
    assert doc.page_starts == [0, 16]
    assert doc.page_at(0) == 1 and doc.page_at(20) == 2


def test_docx_paragraphs_and_tables():
    import docx

    d = docx.Document()
    d.add_paragraph("Press the power button.")
    d.add_paragraph("Hold for three seconds.")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "E4"
    table.rows[0].cells[1].text = "Sensor fault"
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("manual.docx", buf.getvalue())
    assert doc.text == "Press the power button.\n\nHold for three seconds.\n\nE4 | Sensor fault"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.txt", b"", "empty"),
        ("blank.txt", b"  \n\n ", "no text"),
        ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("fake.pdf", b"%PDF-1.4 this is not really a pdf", "not a readable PDF"),
        ("fake.docx", b"PK\x03\x04 not a zip", "not a readable DOCX"),
        ("locked.pdf", encrypt_pdf(make_pdf(["secret"]), "pw"), "encrypted"),
        ("scan.pdf", make_pdf([""]), "no text"),
        ("table.xlsx", b"data", "unsupported"),
    ],
)
def test_bad_files_get_a_clear_message(name, data, message):
    with pytest.raises(DocumentError, match=message) as info:
        load_bytes(name, data)
    assert name in str(info.value)


def test_huge_file_is_refused_before_parsing():
    with pytest.raises(DocumentError, match="over the"):
        load_bytes("big.txt", b"a" * (MAX_FILE_BYTES + 1))


def test_missing_file(tmp_path):
    with pytest.raises(DocumentError, match="cannot be read"):
        load_file(tmp_path / "nope.txt")


def test_join_records_true_joins():
    a, b, c = Document("a", "A", "alpha text"), Document("b", "B", "beta"), Document("c", "C", "gamma!")
    stream = join_documents([a, b, c])
    assert stream.text == "alpha text\n\nbeta\n\ngamma!"
    assert stream.joins == [12, 18]
    for seg, doc in zip(stream.segments, [a, b, c]):
        assert stream.text[seg.start : seg.end] == doc.text
    with pytest.raises(DocumentError):
        join_documents([])
