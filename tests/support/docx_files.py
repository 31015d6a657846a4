"""Real DOCX files for tests, written by python-docx and zipfile: plain paragraphs, one with a field of its ZIP
central directory overwritten, and one whose word/document.xml is replaced by a large (zip-bomb) stream."""

from __future__ import annotations

import io
import zipfile


def docx_bytes(*paragraphs: str) -> bytes:
    import docx

    d = docx.Document()
    for text in paragraphs:
        d.add_paragraph(text)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def docx_with_central_field(offset: int, value: bytes) -> bytes:
    """A python-docx file whose central-directory entry for word/document.xml has `value` written at `offset`
    (8: general-purpose flags, 10: compression method)."""
    data = bytearray(docx_bytes("Press the power button."))
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(b"word/document.xml")] != b"word/document.xml":
        at = data.index(b"PK\x01\x02", at + 4)
    data[at + offset : at + offset + len(value)] = value
    return bytes(data)


def zip_with_document_xml(chunks: int, chunk: bytes, level: int = 1) -> bytes:
    """A DOCX from python-docx whose word/document.xml is replaced by `chunks` copies of `chunk`, streamed into
    the archive so that the test never holds the inflated XML either."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes("placeholder")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for info in source.infolist():
            if info.filename != "word/document.xml":
                archive.writestr(info, source.read(info))
                continue
            with archive.open("word/document.xml", "w", force_zip64=True) as member:
                for _ in range(chunks):
                    member.write(chunk)
    return out.getvalue()
