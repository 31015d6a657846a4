"""A cap on one library's total text (issue 50): nothing bounded how much text a library could gather, upload after
upload, though every chunker and embedder of a comparison holds all of it. The operator's `max_library_text_mb`
(CHUNKLENS_MAX_LIBRARY_TEXT_MB, default 200) is checked wherever documents are added: uploads, a QA set (the
sample set too), a workspace archive, a judged set. The document that would pass it is refused in one line naming
the cap and what the library holds; what the library held stays. Real files, real libraries on disk."""

from __future__ import annotations

import io
import json
import random
import zipfile

import pytest

from core.infra.errors import ConfigError, DatasetError
from core.infra.workspace import Workspace
from core.ingest.library import Library, new_library_id
from core.ingest.library.shelf import MAX_LIBRARY_TEXT_BYTES
from core.outputs.archive import export_archive, import_archive
from core.server_config import ServerConfig, load_server_config
from core.workbench import sample_folder

MB = 2**20


def text_file(word: str, size: int) -> bytes:
    """`size` bytes of plain text in sentences about the `word` filter, varied enough to pack like prose."""
    rng = random.Random(word)
    parts = ["Clean", "the", word, "filter", "every", "two", "weeks", "remote", "battery", "timer", "mode", "fan",
             "press", "hold", "button", "seconds", "water", "tank", "empty", "light"]
    words = " ".join(rng.choice(parts) + rng.choice(["", "", ".", ","]) for _ in range(size // 4))
    return words[:size].encode()


def capped(root, mb: float) -> Library:
    return Library(root / "uploads", new_library_id(), max_text_bytes=int(mb * MB))


def test_the_operator_sets_the_cap_in_the_file_or_the_environment(tmp_path):
    assert ServerConfig().max_library_text_mb == 200 and MAX_LIBRARY_TEXT_BYTES == 200 * MB
    path = tmp_path / "server.toml"
    path.write_text("max_library_text_mb = 50\n")
    assert load_server_config(path, {}).max_library_text_mb == 50
    assert load_server_config(path, {"CHUNKLENS_MAX_LIBRARY_TEXT_MB": "8"}).max_library_text_mb == 8
    with pytest.raises(ConfigError, match="max_library_text_mb"):
        load_server_config(path, {"CHUNKLENS_MAX_LIBRARY_TEXT_MB": "0"})
    assert ServerConfig(max_library_text_mb=8).describe()["library text limit"] == "8 MB of text per library"


def test_the_upload_that_would_pass_the_cap_is_refused_and_the_library_keeps_the_rest(tmp_path):
    lib = capped(tmp_path, 2.5)
    result = lib.add([("a.txt", text_file("air", MB)), ("b.txt", text_file("fan", MB)),
                      ("c.txt", text_file("oven", MB))])
    assert [d.doc_id for d in result.added] == ["a", "b"]
    assert result.errors == ["c.txt: its 1 MB of text would take this library past its limit of 2.5 MB of text (it "
                             "holds 2 MB; setting max_library_text_mb)"]
    # a later upload, by another session's object, counts what is on disk; a small one still fits
    again = Library(lib.root.parent, lib.id, max_text_bytes=int(2.5 * MB))
    late = again.add([("d.txt", text_file("lamp", MB)), ("e.txt", text_file("note", 100_000))])
    assert [d.doc_id for d in late.added] == ["e"] and late.errors[0].startswith("d.txt: its 1 MB of text")
    assert [d.doc_id for d in again.documents()] == ["a", "b", "e"]
    again.remove("a")  # room again
    assert [d.doc_id for d in again.add([("d.txt", text_file("lamp", MB))]).added] == ["d"]


def test_text_is_counted_in_utf8_bytes_of_the_extracted_text(tmp_path):
    lib = capped(tmp_path, 1)
    wide = ("空调过滤网每两周清洁一次。" * 30_000).encode()  # 390,000 characters, 1.1 MB in UTF-8
    assert len(wide) > MB
    assert lib.add([("wide.txt", wide)]).errors[0].startswith("wide.txt: its 1.1 MB of text would take this library")


def test_a_qa_set_past_the_cap_is_refused_whole_and_the_library_is_as_it_was(tmp_path):
    lib = capped(tmp_path, 0.03)  # the sample set holds about 29 KB of text
    assert lib.add([("mine.txt", text_file("air", 5000))]).added
    with pytest.raises(DatasetError, match=r"^QA set 'qa': document '[\w-]+': its \d+ KB of text would take this "
                                           r"library past its limit of 31 KB of text \(it holds \d+ KB; setting "
                                           r"max_library_text_mb\); nothing of the set was kept, the library is as "
                                           r"it was$"):
        lib.load_dataset(sample_folder())
    assert [d.doc_id for d in lib.documents()] == ["mine"] and lib.dataset_folder() is None
    roomy = Library(lib.root.parent, lib.id, max_text_bytes=MB)
    assert len(roomy.load_dataset(sample_folder()).added) == 7


def test_an_archive_import_leaves_out_the_documents_past_the_cap(tmp_path):
    source = Workspace.open(tmp_path / "source")
    big = Library(source.uploads, "abcdef12")
    big.add([("a.txt", text_file("air", MB)), ("b.txt", text_file("fan", MB)), ("c.txt", text_file("oven", MB))])
    data = export_archive(source, lib_ids=["abcdef12"])
    ws = Workspace.open(tmp_path / "ws")
    mine = Library(ws.uploads, "fedcba21")
    mine.add([("own.txt", text_file("lamp", MB // 2))])
    report = import_archive(data, ws, into="fedcba21", max_library_text_bytes=2 * MB)
    assert report.added == ["document a"]
    assert "document b: its 1 MB of text would take this library past its limit of 2 MB of text (it holds 1.5 MB; " \
           "setting max_library_text_mb) (left out)" in report.skipped
    assert [d.doc_id for d in Library(ws.uploads, "fedcba21").documents()] == ["own", "a"]


def test_a_judged_set_leaves_out_the_questions_on_a_document_past_the_cap(tmp_path):
    text = text_file("air", 200_000).decode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("set/corpus.jsonl", json.dumps({"doc_id": "big", "title": "Big", "text": text}) + "\n")
        zf.writestr("set/questions.jsonl", json.dumps({"qid": "mine-1", "question": "How often?", "references": [
            {"doc_id": "big", "start": 0, "end": 40}]}) + "\n")
    lib = capped(tmp_path, 0.1)
    line = lib.import_judged(buf.getvalue(), 10 * MB)
    assert line == ("Imported 0 judged question(s); left out 1 judged on big: its 195 KB of text would take this "
                    "library past its limit of 102 KB of text (it holds 0 bytes; setting max_library_text_mb).")
    assert lib.documents() == [] and lib.judged.questions() == []


def test_the_app_gives_the_sessions_library_the_operators_cap(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from components import state

        st.write(f"cap {state.library().max_text_bytes}")

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("CHUNKLENS_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("CHUNKLENS_MAX_LIBRARY_TEXT_MB", "3")
    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception and at.markdown[0].value == f"cap {3 * MB}"
