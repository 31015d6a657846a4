"""Fuzzing the loaders: whatever bytes arrive under a supported name, `load_bytes` returns a Document with text or
raises DocumentError with one line naming the file; never any other exception (which would be a traceback in
the app and would stop a batch).

Inputs are arbitrary bytes, and real small files (PDF by hand and by pypdf with deflated streams, DOCX by
python-docx, text in several encodings) with bytes flipped, overwritten, inserted, cut out or cut off. DOCX is
also mutated inside its XML and zipped again, so python-docx and lxml see damaged XML rather than only zipfile
seeing a bad checksum. CHUNKLENS_FUZZ_EXAMPLES=N runs N random examples per test instead of 40 fixed ones.
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.infra.errors import DocumentError
from core.ingest.documents import SUPPORTED_SUFFIXES, load_bytes
from core.schema.documents import Document
from tests.support.docx_files import docx_with_central_field
from tests.support.pdfs import assemble_pdf, make_pdf

HUNT = os.environ.get("CHUNKLENS_FUZZ_EXAMPLES")  # set for a longer, randomised hunt; unset: 40 fixed examples
FUZZ = settings(max_examples=int(HUNT or 40), deadline=None, suppress_health_check=[HealthCheck.too_slow],
                derandomize=not HUNT)


def check_load(name: str, data: bytes) -> None:
    try:
        doc = load_bytes(name, data)
    except DocumentError as exc:
        message = str(exc)
        assert message.startswith(f"{name}: ") and "\n" not in message, message
        return
    assert isinstance(doc, Document) and isinstance(doc.text, str) and doc.text.strip()


@cache
def seeds() -> dict[str, bytes]:
    """Small valid files of every supported kind."""
    import docx
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(["Filter (E4) twice.", "Page two."]))))
    for page in writer.pages:
        page.compress_content_streams()
    deflated = io.BytesIO()
    writer.write(deflated)
    document = docx.Document()
    document.add_paragraph("Press the power button for three seconds.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "E4", "Sensor fault"
    packed = io.BytesIO()
    document.save(packed)
    return {
        "raw.pdf": make_pdf(["Clean the filter every two weeks.", "Page two."]),
        "deflated.pdf": deflated.getvalue(),
        "manual.docx": packed.getvalue(),
        "utf8.txt": "Température 25 °C. 空调过滤网。 نظف المرشح.\n\nשלום".encode(),
        "utf16.md": "# Titre\n\nTempérature".encode("utf-16"),
        "cp1252.txt": "Température € 25 °C\r\nsecond line".encode("cp1252"),
    }


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """`data` with a few random edits."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(out) - 1, 0)))
        if op == "flip" and out:
            out[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and out:
            out[pos] = draw(st.sampled_from([0, 0xFF, 0x7F, ord("("), ord("<"), ord("/"), ord("0"), ord(" ")]))
        elif op == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del out[pos : pos + draw(st.integers(1, 64))]
        elif op == "truncate":
            del out[pos:]
    return bytes(out)


@pytest.mark.parametrize("suffix", SUPPORTED_SUFFIXES)
@FUZZ
@given(data=st.binary(max_size=2048))
def test_arbitrary_bytes(suffix, data):
    check_load(f"fuzz{suffix}", data)


@pytest.mark.parametrize("seed", ["raw.pdf", "deflated.pdf", "manual.docx", "utf8.txt", "utf16.md", "cp1252.txt"])
@FUZZ
@given(data=st.data())
def test_mutated_real_files(seed, data):
    original = seeds()[seed]
    check_load(seed, data.draw(mutated(original)))


DOCX_PARTS = ["word/document.xml", "[Content_Types].xml", "word/_rels/document.xml.rels", "_rels/.rels",
              "word/styles.xml"]


@FUZZ
@given(data=st.data(), member=st.sampled_from(DOCX_PARTS))
def test_docx_with_damaged_xml(data, member):
    source = zipfile.ZipFile(io.BytesIO(seeds()["manual.docx"]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = source.read(info)
            archive.writestr(info.filename, data.draw(mutated(content)) if info.filename == member else content)
    check_load("xml.docx", out.getvalue())


@pytest.mark.parametrize("seed", ["raw.pdf", "deflated.pdf", "manual.docx", "utf8.txt", "utf16.md", "cp1252.txt"])
def test_seeds_load(seed):
    assert load_bytes(seed, seeds()[seed]).text.strip()


def _deflated_pdf_with(old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new)  # keep every byte offset in the cross-reference table right
    return seeds()["deflated.pdf"].replace(old, new)


def _docx_with(member: str, edit) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(seeds()["manual.docx"]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = source.read(info)
            archive.writestr(info.filename, edit(content) if info.filename == member else content)
    return out.getvalue()


def _docx_with_broken_deflate() -> bytes:
    """The first byte of word/document.xml's deflate stream set to 0xFF: a final block of the invalid type 3."""
    data = bytearray(seeds()["manual.docx"])
    at = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("word/document.xml").header_offset
    name_len, extra_len = struct.unpack("<HH", data[at + 26 : at + 30])  # local file header: 30 bytes + name + extra
    data[at + 30 + name_len + extra_len] = 0xFF
    return bytes(data)


#: PDFs that crashed pypdf, the loader before PDFium, each with what PDFium makes of it now: the text it reads,
#: or the one-line message shown.
PDF_CRASHES = [
    ("pdf-filter-abbreviation", "a.pdf", lambda: _deflated_pdf_with(b"/FlateDecode", b"/Fl         "),
     "Filter (E4) twice.\n\nPage two."),
    ("pdf-unknown-filter", "b.pdf", lambda: _deflated_pdf_with(b"/FlateDecode", b"0.0         "),
     r"no text could be read: its pages draw nothing \(a blank or damaged PDF\)"),
    ("pdf-reference-in-content", "c.pdf", lambda: make_pdf(["Clean the filter."]).replace(b"72 720", b"1 0 R "),
     "Clean the filter."),
    ("pdf-object-that-is-a-reference", "g.pdf", lambda: assemble_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", b"4 0 R",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"]),
     r"not a readable PDF, it may be damaged or cut short \(Failed to load page.\)"),
    ("pdf-huge-startxref", "i.pdf", lambda: re.sub(rb"startxref\n\d+", b"startxref\n" + b"9" * 23,
                                                   make_pdf(["Clean."])), "Clean."),
]


@pytest.mark.parametrize("case", PDF_CRASHES, ids=[c[0] for c in PDF_CRASHES])
def test_pdfs_that_crashed_the_old_loader_are_read_or_refused_in_one_line(case):
    _, name, make, outcome = case
    data = make()
    if outcome.endswith("."):
        assert load_bytes(name, data).text == outcome
    else:
        with pytest.raises(DocumentError, match=outcome):
            load_bytes(name, data)
    check_load(name, data)


def found_by_fuzzing():
    """(what, file, library exception it used to escape as, message now shown) for every crash the fuzzers found."""
    import zlib

    return [
        ("docx-zip-version-25.5", "h.docx", docx_with_central_field(6, b"\xff\x00"), NotImplementedError,
         r"not a readable DOCX file \(not a valid ZIP archive: zip file version 25.5\)"),
        ("docx-broken-deflate", "d.docx", _docx_with_broken_deflate(), zlib.error,
         "not a readable DOCX file .*invalid block type"),
        ("docx-renamed-root", "e.docx", _docx_with("[Content_Types].xml", lambda x: x.replace(b"<Types", b"<Typez")
                                                                   .replace(b"</Types>", b"</Typez>")),
         AttributeError, "not a readable DOCX file"),
        ("docx-relationship-without-target", "f.docx",
         _docx_with("word/_rels/document.xml.rels", lambda x: x.replace(b'Target="styles.xml"', b"")),
         TypeError, "not a readable DOCX file"),
    ]


@pytest.mark.parametrize("case", range(4), ids=lambda i: found_by_fuzzing()[i][0])
def test_crashes_found_by_fuzzing_are_clear_messages(case):
    what, name, data, escaped_as, message = found_by_fuzzing()[case]
    with pytest.raises(DocumentError, match=message) as info:
        load_bytes(name, data)
    cause = info.value.__cause__  # raised here, or in the reader's worker process and named in its answer
    named = f"{escaped_as.__module__}.{escaped_as.__qualname__}"
    assert isinstance(cause, escaped_as) or getattr(cause, "kind", None) == named, (what, repr(cause))
    check_load(name, data)
