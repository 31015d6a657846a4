"""The DOCX XML limit counts what the reader parses as XML, found by content type, not by file name (issue 50): a
body renamed `word/document.dat`, with a matching Override in [Content_Types].xml, is read and parsed by
python-docx (and Word) like `word/document.xml`, and used to pass the limit uncounted."""

from __future__ import annotations

import io
import random
import zipfile

import docx
import pytest

from bench.hostile import renamed_body
from core.infra.errors import DocumentError
from core.ingest import documents
from core.ingest.documents import load_bytes
from tests.support.docx_files import docx_bytes

BODY = "word/document.xml"
RENAMED = "word/document.dat"


def _sizes(data: bytes) -> tuple[int, int]:
    """(bytes in members named .xml or .rels, bytes of the renamed body)."""
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    by_name = sum(i.file_size for i in infos if i.filename.lower().endswith((".xml", ".rels")))
    return by_name, next(i.file_size for i in infos if i.filename == RENAMED)


@pytest.fixture(scope="module")
def renamed() -> bytes:
    return renamed_body(docx_bytes(*[f"Step {i}: press the power button for three seconds." for i in range(400)]))


def test_the_renamed_body_is_a_document_python_docx_reads(renamed):
    paragraphs = [p.text for p in docx.Document(io.BytesIO(renamed)).paragraphs]
    assert paragraphs[0] == "Step 0: press the power button for three seconds." and len(paragraphs) == 400
    assert load_bytes("renamed.docx", renamed).text.startswith("Step 0: press the power button")


def test_a_renamed_body_past_the_xml_limit_is_refused(renamed, monkeypatch):
    by_name, body = _sizes(renamed)
    assert body > 20_000
    monkeypatch.setattr(documents, "MAX_DOCX_XML_BYTES", by_name + body // 2)  # the names alone stay under it
    with pytest.raises(DocumentError, match=r"^renamed\.docx: the DOCX holds \d+ KB of XML, over the \d+ KB limit "
                                            r"for one document$"):
        load_bytes("renamed.docx", renamed)


def test_a_part_with_an_xml_default_content_type_is_counted(monkeypatch):
    """A Default by extension counts as well as an Override: `.dat` parts given an XML type for the whole
    package."""
    data = renamed_body(docx_bytes(*["Clean the filter every two weeks."] * 300))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        types = zf.read("[Content_Types].xml")
    main = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    types = types.replace(f'<Override PartName="/{RENAMED}" ContentType="'.encode() + main + b'"/>', b"")
    types = types.replace(b"<Default ", b'<Default Extension="dat" ContentType="' + main + b'"/><Default ', 1)
    data = _replaced(data, "[Content_Types].xml", types)
    assert len(docx.Document(io.BytesIO(data)).paragraphs) == 300  # python-docx reads it through the Default
    by_name, body = _sizes(data)
    monkeypatch.setattr(documents, "MAX_DOCX_XML_BYTES", by_name + body // 2)
    with pytest.raises(DocumentError, match=r"holds \d+ KB of XML, over the \d+ KB limit"):
        load_bytes("default.docx", data)


def test_a_content_types_part_too_large_to_be_real_is_refused_before_it_is_parsed():
    data = docx_bytes("Press the power button.")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        types = zf.read("[Content_Types].xml")
    noise = random.Random(3).randbytes(2**20).hex().encode()  # 2 MB that pack about 2:1, under every ratio limit
    padded = types.replace(b"<Default ", b"<!--" + noise + b"--><Default ", 1)
    with pytest.raises(DocumentError, match=r"^big\.docx: its \[Content_Types\]\.xml is 2\.0 MB, over the 1\.0 MB "
                                            r"a DOCX's list of part types may take$"):
        load_bytes("big.docx", _replaced(data, "[Content_Types].xml", padded))


def _replaced(data: bytes, name: str, blob: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, blob if info.filename == name else source.read(info))
    return out.getvalue()
