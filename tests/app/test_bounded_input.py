"""Input from outside (uploads, archives, a model's answers) is bounded and explained: JSON nested too deeply to parse,
fields of the wrong type, files and PDFs over their limits each end in one line naming the file, never a
traceback, a crash on the next page, or unbounded work. Real files throughout (zipfile, PDF syntax, the real
answer cache on disk)."""

from __future__ import annotations

import io
import json
import random
import sqlite3
import zipfile

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ChunkLensError
from core.infra.workspace import Workspace
from core.llm.base import AnswerCache, LLMClient
from core.methods.chop.cnm import PromptedCnm
from core.methods.chop.rules import RuleCnm
from core.schema.documents import Document
from tests.support.fakes import ScriptedChat

DEEP = "[" * 100_000  # 100 KB: far past the JSON parser's recursion limit


def zip_of(members: dict[str, bytes], manifest: bytes | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", manifest or json.dumps({"format": "chunklens-archive", "version": 1}))
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


# ---------------------------------------------------------------- JSON nested too deeply


def test_a_deeply_nested_archive_member_is_left_out_with_a_reason(tmp_path):
    from core.outputs.archive import import_archive

    ws = Workspace.open(tmp_path / "ws")
    good = json.dumps({"doc_id": "a", "title": "a", "text": "Filter monthly."}).encode()
    data = zip_of({"libraries/abcdef12/texts/a.json": good, "libraries/abcdef12/texts/b.json": DEEP.encode()})
    assert len(data) < 1500  # a tiny zip: deflate packs the brackets 1000:1
    report = import_archive(data, ws)
    assert report.added == ["document a"]
    assert "libraries/abcdef12/texts/b.json: not valid JSON: nested too deeply" in " ".join(report.skipped)


def test_a_deeply_nested_manifest_refuses_the_archive(tmp_path):
    from core.ingest.safezip import ArchiveError
    from core.outputs.archive import import_archive

    ws = Workspace.open(tmp_path / "ws")
    with pytest.raises(ArchiveError, match="manifest.json: not valid JSON: nested too deeply"):
        import_archive(zip_of({}, manifest=DEEP.encode()), ws)
    assert list(ws.uploads.iterdir()) == []


def rule_chop_chunks():
    doc = Document("d", "d", "Clean the filter of the Breeze 200 monthly.\n\nReplace it every year.")
    return make_chunker("chop", ChunkerContext(llm=RuleCnm())).chunk(doc).chunks


@pytest.mark.parametrize(("data", "message"), [
    (DEEP.encode(), "tags.json: not valid JSON: nested too deeply"),
    (b'{"chunk_id": 1}', "tags.json: a tag file is a JSON list of chunk entries"),
    (b"[1, 2]", "tags.json: a tag file is a JSON list of chunk entries"),
    (b"\xff\xfe[]", "tags.json: not UTF-8 text"),
])
def test_a_bad_tag_file_is_one_line_naming_it(data, message):
    from core.workbench import tag_file_edits

    with pytest.raises(ChunkLensError, match=message) as err:
        tag_file_edits(rule_chop_chunks(), "tags.json", data)
    assert "\n" not in str(err.value)


def test_a_tag_of_the_wrong_type_is_one_line_naming_the_file():
    from core.methods.chop.edits import export_tags
    from core.workbench import tag_file_edits

    chunks = rule_chop_chunks()
    rows = export_tags(chunks)
    rows[0]["cnm"] = {"category": ["not", "text"], "nouns": 3}
    with pytest.raises(ChunkLensError, match="tags.json: a tag is not category / nouns / model text") as err:
        tag_file_edits(chunks, "tags.json", json.dumps(rows).encode())
    assert "\n" not in str(err.value)


def answers_cached(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


def test_a_deeply_nested_llm_answer_is_an_error_line_and_is_not_cached(tmp_path):
    """The answer cache is written before the answer is parsed: a parser crash (RecursionError) came back from the
    cache on every rerun. Now the tag is empty with a reason, and only answers that parse are cached."""
    cache = tmp_path / "answers.sqlite"
    doc = Document("d", "d", "Clean the filter of the Breeze 200 monthly.")

    def chunk(script):
        chat = ScriptedChat(script)
        llm = PromptedCnm(LLMClient(chat, AnswerCache(cache)))
        return make_chunker("chop", ChunkerContext(llm=llm)).chunk(doc), chat

    result, chat = chunk(lambda prompt: '{"category": ' + DEEP)
    [only] = result.chunks
    assert only.meta["cnm_error"] == "no JSON object in the answer" and only.meta["cnm"]["category"] is None
    assert len(chat.requests) == 1 and answers_cached(cache) == 0
    good = '{"category": "fan", "nouns": ["fan filter"], "model": "Breeze 200", "confidence": 0.9}'
    again, chat = chunk(lambda prompt: good)  # the server is fixed: the rerun asks again and keeps this answer
    assert len(chat.requests) == 1 and again.chunks[0].meta["cnm"]["model"] == "Breeze 200"
    assert answers_cached(cache) == 1


# ---------------------------------------------------------------- uploads over their kind's limit


class EndlessUpload(io.RawIOBase):
    """A file-like upload of endless bytes that neither says its size nor seeks: only a bounded read ends."""

    def __init__(self) -> None:
        self.handed_out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        buffer[:] = b"x" * len(buffer)
        self.handed_out += len(buffer)
        return len(buffer)


def test_an_upload_over_its_limit_is_refused_naming_file_size_and_limit():
    from core.infra.uploads import UploadError, read_upload

    limit = 2**20
    with pytest.raises(UploadError, match=r"^questions\.jsonl: 1\.5 MB, over the 1 MB limit for QA sets$"):
        read_upload(io.BytesIO(b"{}\n" * (2**19)), "questions.jsonl", limit, "QA sets")
    endless = io.BufferedReader(EndlessUpload())
    with pytest.raises(UploadError, match=r"^tags\.json: over the 1 MB limit for tag files$"):
        read_upload(endless, "tags.json", limit, "tag files")
    assert endless.raw.handed_out <= limit + 1 + io.DEFAULT_BUFFER_SIZE  # read just past the limit, then stopped
    exact = io.BytesIO(b"y" * limit)
    exact.read(10)  # read before, on an earlier run of the page: read again from the start
    assert read_upload(exact, "ok.json", limit, "tag files") == b"y" * limit


def test_the_archive_uploader_refuses_a_zip_over_its_limit(tmp_path, monkeypatch):
    """The Documents page's import panel reads an archive through the bounded read (the limit made small here)."""
    from streamlit.testing.v1 import AppTest

    import components.archive_panel
    from tests.support.appflow import click
    from tests.support.data import ROOT

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setattr(components.archive_panel, "MAX_ARCHIVE_BYTES", 1024)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/documents.py").run()
    data = zip_of({"libraries/abcdef12/originals/a.txt": random.Random(1).randbytes(4096)})
    assert len(data) > 4096
    at.file_uploader(key="archive_upload").set_value(("big.zip", data, "application/zip")).run()
    at = click(at, "Import into this library")
    assert not at.exception
    [error] = at.error
    assert error.value.startswith("Not imported: big\\.zip\\: ") and "over the 1 KB limit for ChunkLens archives" \
        in error.value


def test_a_pdf_built_to_exhaust_the_reader_is_one_line_and_the_rest_of_the_batch_is_added(tmp_path, monkeypatch):
    """Through the Documents page: 2.4 KB of nested PDF forms beside a real manual. Before the reader's worker
    process, PDFium aborted the app's own process on this file."""
    from bench.hostile import make_nested_forms_pdf
    from tests.support.appflow import new_session, upload
    from tests.support.pdfs import make_pdf

    at = upload(new_session(monkeypatch, tmp_path / "ws"), [("forms.pdf", make_nested_forms_pdf(7)),
                                                          ("filter.pdf", make_pdf(["Clean the filter."]))])
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]  # shown Markdown-escaped
    assert len(errors) == 1 and errors[0].startswith("forms.pdf: reading it needed more than the 1024 MB memory "
                                                     "limit for one file, so it was stopped"), errors
    assert "\n" not in errors[0]
    assert "Added 1 document(s): filter" in at.success[0].value
