"""Loading files to text: every supported type, every kind of bad input, and joined streams.

The bad inputs here are the rows of docs/BAD_INPUT.md; every file is real (written by pypdf, python-docx,
zipfile or by hand in PDF syntax), nothing is mocked.
"""

from __future__ import annotations

import inspect
import io
import random
import tracemalloc
import zipfile

import pytest

from core.infra.errors import DocumentError
from core.ingest.documents import MAX_DOCX_UNPACKED_BYTES, MAX_FILE_BYTES, join_documents, load_bytes, load_file
from core.schema.documents import Document
from tests.support.docx_files import docx_bytes, docx_with_central_field, zip_with_document_xml
from tests.support.pdfs import encrypt_pdf, make_aes_encrypted_pdf, make_pdf, make_scanned_pdf


def test_text_and_markdown_keep_their_text():
    doc = load_bytes("Manual 225B.md", b"# Title\r\n\r\nClean the filter.\r\n")
    assert doc.text == "# Title\n\nClean the filter.\n"
    assert doc.doc_id == "Manual-225B" and doc.title == "Manual 225B"
    assert doc.notes == []


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


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504  # Word 97 .doc, or an Office file with a password


def blank_page_pdf() -> bytes:
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_blank_page(612, 792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def damaged_stream_pdf() -> bytes:
    """A real PDF whose only content stream is deflated, with three bytes of it overwritten."""
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(["Page one text."]))))
    writer.pages[0].compress_content_streams()
    out = io.BytesIO()
    writer.write(out)
    data = out.getvalue()
    at = data.index(b"stream\n") + 10
    return data[:at] + b"\xff\xff\xff" + data[at + 3 :]


BAD_FILES = [
    ("empty.txt", b"", "the file is empty"),
    ("blank.txt", b"  \n\n \t", r"the file is empty \(only whitespace\)"),
    ("blank-unicode.md", "\u3000\u00a0\n".encode(), "only whitespace"),
    ("blank-utf16.txt", " \n ".encode("utf-16"), "only whitespace"),
    ("image.txt", PNG, "the content is a PNG image, not text"),
    ("renamed.txt", make_pdf(["a real PDF"]), "the content is a PDF file, not text"),
    ("nul.txt", b"text\x00with a NUL byte", "looks like a binary file"),
    ("noise.txt", bytes(range(1, 256)) * 8, "looks like a binary file"),
    ("controls.md", bytes(range(1, 32)) * 50, "looks like a binary file"),  # valid UTF-8, yet not text
    ("bad-utf16.txt", b"\xff\xfe\x00\xd8", "not valid UTF-16"),
    ("photo.pdf", PNG, "the content is a PNG image, not a PDF"),
    ("fake.pdf", b"%PDF-1.4 this is not really a pdf", "not a readable PDF"),
    ("cut.pdf", make_pdf(["Page one text.", "Page two text."])[:300], "not a readable PDF, it may be damaged or cut"),
    ("damaged.pdf", damaged_stream_pdf(), "no text could be read: its pages draw nothing"),
    ("locked.pdf", encrypt_pdf(make_pdf(["secret"]), "pw"), "the PDF is encrypted with a password"),
    ("aes.pdf", make_aes_encrypted_pdf(), "the PDF is encrypted with a password"),
    ("scan.pdf", make_scanned_pdf(), r"no text layer \(a scanned PDF\? run OCR on it first\)"),
    ("blank-page.pdf", blank_page_pdf(), r"no text could be read: its pages draw nothing \(a blank or damaged PDF\)"),
    ("fake.docx", b"PK\x03\x04 not a zip", "not a readable DOCX file"),
    ("notes.docx", b"just some text", "not a readable DOCX file"),
    ("old.docx", OLE, "legacy or password-protected Office file, not a DOCX; save it without a password"),
    ("image.docx", PNG, "the content is a PNG image, not a DOCX"),
    ("empty.docx", docx_bytes(), "the document holds no text"),
    ("zip-password.docx", docx_with_central_field(8, b"\x01"), "word/document.xml is encrypted inside the ZIP"),
    ("zip-aes.docx", docx_with_central_field(10, b"\x63\x00"), "word/document.xml uses ZIP method 99, which cannot"),
    ("table.xlsx", b"data", "unsupported file type '.xlsx'"),
]


@pytest.mark.parametrize(("name", "data", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_get_a_clear_message(name, data, message):
    with pytest.raises(DocumentError, match=message) as info:
        load_bytes(name, data)
    assert str(info.value).startswith(f"{name}: ") and "\n" not in str(info.value)


def test_owner_password_only_pdf_still_loads():
    """An owner password only restricts printing or copying; the text is readable without any password."""
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(["Open to read."]))))
    writer.encrypt(user_password="", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    assert load_bytes("restricted.pdf", out.getvalue()).text == "Open to read."


def test_size_limit_is_a_parameter_checked_before_parsing():
    # bytes that would fail to parse: the limit must speak first
    with pytest.raises(DocumentError, match=r"^big.pdf: 2 KB is over the 1 KB upload limit \(setting max_upload_mb\)$"):
        load_bytes("big.pdf", b"\x00" * 2048, max_bytes=1024)
    assert load_bytes("ok.txt", b"x" * 1024, max_bytes=1024).text == "x" * 1024
    assert inspect.signature(load_bytes).parameters["max_bytes"].default == MAX_FILE_BYTES == 50 * 2**20


def test_a_real_over_limit_file_is_refused():
    data = ("All work and no play. " * 150_000).encode()  # 3.1 MB of real text
    with pytest.raises(DocumentError, match=r"^manual.txt: 3.1 MB is over the 1.0 MB upload limit"):
        load_bytes("manual.txt", data, max_bytes=2**20)
    assert load_bytes("manual.txt", data, max_bytes=4 * 2**20).text == data.decode()


def test_a_200_mb_file_is_refused_without_reading_it(tmp_path):
    """A sparse 200 MB file: load_file checks its size on disk, so its bytes are never read into memory."""
    path = tmp_path / "huge.pdf"
    with path.open("wb") as f:
        f.truncate(200 * 2**20)
    tracemalloc.start()
    try:
        with pytest.raises(DocumentError, match=r"^huge.pdf: 200.0 MB is over the 50.0 MB upload limit"):
            load_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_docx_zip_bomb_is_refused_from_the_central_directory():
    bomb = zip_with_document_xml(300, b"<w:p/>" * (2**20 // 6))  # 300 MB of XML in about 1.4 MB
    assert len(bomb) < 2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(DocumentError, match=r"^bomb.docx: the DOCX would unpack to 30\d\.\d MB, over the 256.0 MB "
                                                r"limit \(refused as a likely zip bomb\)$"):
            load_bytes("bomb.docx", bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20, "the archive was inflated"


def test_docx_compression_ratio_is_limited():
    dense = zip_with_document_xml(20, b" " * 2**20, level=9)  # 20 MB of spaces: under the size limit, ~1000:1
    assert zipfile.ZipFile(io.BytesIO(dense)).getinfo("word/document.xml").file_size < MAX_DOCX_UNPACKED_BYTES
    with pytest.raises(DocumentError, match=r"^dense.docx: word/document.xml is compressed \d+:1, over the 100:1"):
        load_bytes("dense.docx", dense)


def test_non_utf8_text_loads_with_a_note():
    doc = load_bytes("legacy.txt", "Température 25 °C, prix 10 €".encode("cp1252"))
    assert doc.text == "Température 25 °C, prix 10 €"
    assert doc.notes == ["legacy.txt: not UTF-8; read as Windows-1252 (Western European)"]


def test_mixed_encodings_keep_each_line():
    data = "Café au lait\n".encode() + "Température €\r\n".encode("cp1252") + "naïve 空调\n".encode()
    doc = load_bytes("mixed.md", data)
    assert doc.text == "Café au lait\nTempérature €\nnaïve 空调\n"
    assert doc.notes == ["mixed.md: mixed encodings; 1 of 4 lines are not UTF-8 and were read as Windows-1252"]
    assert load_bytes("clean.txt", "naïve 空调".encode()).notes == []


CHINESE = "空调过滤网每两周清洁一次。遥控器需要两节电池！如果显示E4，请联系售后服务？\n\n风扇有三档风速。"
ARABIC = "نظف المرشح كل أسبوعين. يحتاج جهاز التحكم عن بعد إلى بطاريتين!\n\nاضغط على زر التشغيل لمدة ثلاث ثوان."
HEBREW = "נקו את המסנן כל שבועיים. השלט צריך שתי סוללות!\n\n\u200fלחצו על כפתור ההפעלה שלוש שניות."


@pytest.mark.parametrize("text", [CHINESE, ARABIC, HEBREW], ids=["chinese", "arabic", "hebrew"])
def test_chinese_and_right_to_left_text_load_and_chunk_exactly(text):
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from tests.support.spans import check_spans

    assert load_bytes("t.txt", text.encode()).text == text
    assert load_bytes("t.txt", text.encode("utf-16")).text == text
    doc = load_bytes("t.docx", docx_bytes(*text.split("\n\n")))
    assert doc.text == text
    for spec in ("recursive:theta=8", "sentence:max_tokens=16", "naive-500t:size=16:overlap=3", "paragraph:theta=8"):
        chunks = make_chunker(spec, ChunkerContext()).chunk(doc).chunks
        assert len(chunks) > 1, spec
        check_spans(text, chunks, windows=spec.startswith("naive"))


def test_five_mb_line_without_punctuation_loads_and_chunks():
    """One 5 MB line of words, no punctuation, no newline: it loads, and each of these chunkers cuts it into exact
    spans within its cap (pysbd alone would need hours on it; see core.text.PYSBD_BLOCK)."""
    from core import text as T
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from tests.support.spans import check_spans

    rng = random.Random(5)
    vocab = ["filter", "remote", "battery", "timer", "mode", "lens", "fan", "water", "clean", "hold", "225B"]
    text = " ".join(rng.choice(vocab) for _ in range(900_000))[: 5 * 2**20].strip()
    assert len(text) > 5_000_000 and "\n" not in text
    doc = load_bytes("line.txt", text.encode())
    assert doc.text == text
    caps = {"recursive": ("words", 200), "naive-500t": ("tokens", 500), "sentence": ("tokens", 256)}
    for spec, (unit, cap) in caps.items():
        chunks = make_chunker(spec, ChunkerContext()).chunk(doc).chunks
        check_spans(text, chunks, windows=spec.startswith("naive"))
        sizes = [c.token_count if unit == "tokens" else T.count_words(c.text) for c in chunks]
        assert max(sizes) <= cap, spec


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


# ---------------------------------------------------------------- PDFs that cost more than their size


def test_a_pdf_whose_pages_repeat_one_stream_is_stopped_at_the_text_limit():
    """Four pages sharing one deflated stream that shows a 100-character line 2250 times: a 2 KB file that stands
    for 0.9 M characters. The text limit (characters per byte of file) stops it after the first page, before
    pypdf reads the other three."""
    from tests.support.pdfs import make_repeating_pdf

    data = make_repeating_pdf(4, ("Clean the filter of the Breeze 200 every month. " * 3)[:100], 2250)
    assert len(data) < 2500
    with pytest.raises(DocumentError, match=r"bomb\.pdf: over the [\d,]+-character limit for the text of a 2 KB "
                                            r"PDF \(reached on page 1;") as err:
        load_bytes("bomb.pdf", data)
    assert "\n" not in str(err.value)


def test_a_pdf_over_the_page_limit_is_refused_before_a_page_is_read():
    from core.ingest.documents import MAX_PDF_PAGES
    from tests.support.pdfs import make_repeating_pdf

    data = make_repeating_pdf(MAX_PDF_PAGES + 1, "One line.", 1)
    with pytest.raises(DocumentError, match=rf"^long\.pdf: over the {MAX_PDF_PAGES}-page limit \(2001 pages\)$"):
        load_bytes("long.pdf", data)
    assert load_bytes("ok.pdf", make_repeating_pdf(3, "One line.", 1)).page_starts == [0, 11, 22]


def test_a_pdf_that_reads_too_slowly_is_stopped_after_the_page_that_passed_the_time_limit():
    from core.ingest.documents import PdfLimits
    from tests.support.pdfs import make_repeating_pdf

    data = make_repeating_pdf(4, "Rinse the filter in lukewarm water.", 200)
    with pytest.raises(DocumentError, match=r"^slow\.pdf: over the 1e-06-second limit for reading a PDF \(stopped "
                                            r"after page 1 of 4\)$"):
        load_bytes("slow.pdf", data, pdf_limits=PdfLimits(seconds=1e-6))
    assert len(load_bytes("slow.pdf", data).page_starts) == 4  # the default limit reads it
