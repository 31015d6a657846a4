"""A damaged file in the workspace is reported and kept, never silently dropped or destroyed: a library document
whose stored text is damaged, the library's saved QA set, and the settings file. Each is a real damaged file on
disk; each gets one line naming the file, what is wrong and where it was kept (`<name>.damaged-<UTC time>` beside
it); everything else loads as before; a second load neither reports it again nor makes a second copy."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.ingest.library import Library, keep_aside, new_library_id
from core.settings import Settings, load_settings, load_settings_checked, save_settings, settings_path
from tests.support.corpora import DOCS, GOOD_QS, jsonl
from tests.support.data import ROOT


@pytest.fixture()
def lib(tmp_path):
    return Library(tmp_path / "uploads", new_library_id())


def kept_copies(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.damaged-*"))


def one_line(message: str) -> str:
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- keep_aside


def test_keep_aside_never_overwrites_an_earlier_copy(tmp_path):
    now = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    f = tmp_path / "x.json"
    names = []
    for content in (b"first", b"second", b"third"):
        f.write_bytes(content)
        names.append(keep_aside(f, now).name)
    assert names == ["x.json.damaged-20250304T050607Z", "x.json.damaged-20250304T050607Z-2",
                     "x.json.damaged-20250304T050607Z-3"]
    assert [p.read_bytes() for p in kept_copies(f)] == [b"first", b"second", b"third"]
    assert not f.exists()
    with pytest.raises(FileNotFoundError):
        keep_aside(f, now)


# ---------------------------------------------------------------- library documents

DAMAGED_TEXTS = {
    "cut-short": (b'{"doc_id": "fan", "title": "fan", "text": "Clean the bla', "not valid JSON"),
    "not-utf8": (b'{"doc_id": "fan", "title": "fan", "text": "\xff\xfe"}', "not UTF-8 text"),
    "not-an-object": (b'["fan"]', "not a JSON object"),
    "no-text": (b'{"doc_id": "fan", "title": "fan"}', "no string field 'text'"),
}


@pytest.mark.parametrize("damage", list(DAMAGED_TEXTS))
def test_a_damaged_document_text_is_reported_kept_and_the_rest_load(lib, damage):
    lib.add([("kettle.txt", b"Descale monthly."), ("fan.txt", b"Clean the blades."), ("lamp.md", b"# Lamp\n\nOn.")])
    stored = lib.texts / "fan.json"
    bad, reason = DAMAGED_TEXTS[damage]
    stored.write_bytes(bad)

    again = Library(lib.root.parent, lib.id)  # the next page run, or a restart
    assert [d.doc_id for d in again.documents()] == ["kettle", "lamp"]
    [line] = again.problems
    [kept] = kept_copies(stored)
    assert one_line(line).startswith(f"{stored}: damaged ({reason}")
    assert "document 'fan' is left out" in line and f"kept as {kept.name} in the same folder" in line
    assert "original upload fan.txt is kept" in line
    assert re.fullmatch(r"fan\.json\.damaged-\d{8}T\d{6}Z", kept.name)
    assert kept.read_bytes() == bad and not stored.exists()
    assert (lib.originals / "fan.txt").read_bytes() == b"Clean the blades."

    third = Library(lib.root.parent, lib.id)
    assert [d.doc_id for d in third.documents()] == ["kettle", "lamp"]
    assert third.problems == [] and kept_copies(stored) == [kept]
    assert third.check() == []

    # uploading the file again brings the document back, and the earlier original and kept copy stay
    [doc] = third.add([("fan.txt", b"Clean the blades.")]).added
    assert doc.doc_id == "fan-2" and (lib.originals / "fan.txt").exists()
    assert [d.doc_id for d in third.documents()] == ["kettle", "lamp", "fan-2"]
    assert kept_copies(stored) == [kept]


def test_a_damaged_document_order_is_rebuilt_from_the_stored_texts(lib):
    lib.add([("kettle.txt", b"Descale monthly."), ("fan.txt", b"Clean the blades.")])
    order = lib.root / "order.json"
    order.write_bytes(b'["kettle", "fa')
    again = Library(lib.root.parent, lib.id)
    assert sorted(d.doc_id for d in again.documents()) == ["fan", "kettle"]
    [line] = again.problems
    [kept] = kept_copies(order)
    assert one_line(line).startswith(f"{order}: damaged (not valid JSON")
    assert "the order of the 2 stored documents was rebuilt" in line and kept.name in line
    assert kept.read_bytes() == b'["kettle", "fa'
    third = Library(lib.root.parent, lib.id)
    assert len(third.documents()) == 2 and third.problems == [] and kept_copies(order) == [kept]


# ---------------------------------------------------------------- the library's QA set


def set_library(lib: Library, tmp_path: Path) -> Path:
    """The library with a saved QA set (two documents, one question); returns the set's folder."""
    ds = lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS)).dataset
    assert len(ds.questions) == 1
    return lib.sets_dir / "my-set"


def test_a_damaged_qa_set_file_is_reported_kept_and_the_documents_stay(lib, tmp_path):
    folder = set_library(lib, tmp_path)
    questions = folder / "questions.jsonl"
    bad = jsonl(GOOD_QS) + b'{"qid": "2", "question": "Cut sh\n'
    questions.write_bytes(bad)

    again = Library(lib.root.parent, lib.id)
    assert again.dataset() is None
    [line] = again.problems
    [kept] = kept_copies(questions)
    assert one_line(line).startswith(f"{questions}: damaged (line 2: not valid JSON")
    assert "the questions of QA set 'my-set' are left out, this library's documents stay" in line
    assert f"kept as {kept.name} in the same folder" in line
    assert kept.read_bytes() == bad and not questions.exists()
    assert [d.doc_id for d in again.documents()] == ["a", "b"]

    third = Library(lib.root.parent, lib.id)  # the library forgot the broken set: no second report, no copy
    assert third.dataset() is None and third.check() == [] and kept_copies(questions) == [kept]
    assert [d.doc_id for d in third.documents()] == ["a", "b"]

    # loading the repaired set again gives the questions back; the kept copy stays
    assert len(third.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS),
                                           replace=True).dataset.questions) == 1
    assert len(Library(lib.root.parent, lib.id).dataset().questions) == 1


def test_a_damaged_qa_set_pointer_is_kept(lib, tmp_path):
    set_library(lib, tmp_path)
    pointer = lib.root / "dataset.json"
    pointer.write_bytes(b'{"path": ')
    again = Library(lib.root.parent, lib.id)
    assert again.dataset() is None
    [line] = again.problems
    [kept] = kept_copies(pointer)
    assert one_line(line).startswith(f"{pointer}: damaged (not valid JSON") and kept.name in line
    assert "this library forgets its QA set (its documents stay" in line
    assert kept.read_bytes() == b'{"path": '
    assert [d.doc_id for d in again.documents()] == ["a", "b"]
    third = Library(lib.root.parent, lib.id)
    assert third.dataset() is None and third.problems == [] and kept_copies(pointer) == [kept]


def test_a_qa_set_that_is_gone_is_reported_on_each_load_and_nothing_moves(lib, tmp_path):
    folder = set_library(lib, tmp_path)
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    for _ in range(2):
        again = Library(lib.root.parent, lib.id)
        assert again.dataset() is None
        assert again.problems == [f"{folder}: not a folder; the questions of QA set 'my-set' are left out, this "
                                  "library's documents stay."]
        assert [d.doc_id for d in again.documents()] == ["a", "b"]
    assert json.loads((lib.root / "dataset.json").read_text())["path"] == str(folder.resolve())


def test_another_library_on_a_damaged_set_is_told_where_the_copy_is(lib, tmp_path):
    folder = set_library(lib, tmp_path)
    other = Library(lib.root.parent, new_library_id())
    other.load_dataset(folder)
    (folder / "corpus.jsonl").write_bytes(b"\x00\xff not text")
    first = Library(lib.root.parent, lib.id)
    assert first.dataset() is None and "corpus.jsonl: damaged (not UTF-8 text)" in first.problems[0]
    [kept] = kept_copies(folder / "corpus.jsonl")
    second = Library(lib.root.parent, other.id)
    assert second.dataset() is None
    [line] = second.problems
    assert line.startswith(f"{folder / 'corpus.jsonl'}: missing") and f"a damaged copy is kept as {kept.name}" in line
    assert kept_copies(folder / "corpus.jsonl") == [kept]


# ---------------------------------------------------------------- settings


def test_a_damaged_settings_file_is_reported_kept_and_not_overwritten_by_the_next_save(tmp_path):
    save_settings(Settings(top_k=7), tmp_path)
    path = settings_path(tmp_path)
    bad = path.read_bytes()[:40]  # cut short, as by a full disk
    path.write_bytes(bad)

    loaded = load_settings_checked(tmp_path)
    assert loaded.settings == Settings()
    [kept] = kept_copies(path)
    assert loaded.kept == kept and kept.read_bytes() == bad and not path.exists()
    assert one_line(loaded.problem).startswith(f"{path}: damaged (not valid JSON")
    assert "using the default settings" in loaded.problem
    assert f"kept as {kept.name} in the same folder" in loaded.problem

    again = load_settings_checked(tmp_path)
    assert again.problem is None and again.settings == Settings() and kept_copies(path) == [kept]
    assert load_settings(tmp_path) == Settings()

    assert save_settings(Settings(top_k=9), tmp_path) is None
    assert kept_copies(path) == [kept] and kept.read_bytes() == bad
    assert load_settings_checked(tmp_path) == load_settings_checked(tmp_path)
    assert load_settings(tmp_path).top_k == 9


def test_settings_keep_their_valid_fields_when_one_is_out_of_range(tmp_path):
    path = settings_path(tmp_path)
    bad = json.dumps({"workspace": str(tmp_path / "mine"), "top_k": 500, "retrieval": "bm25"}).encode()
    path.write_bytes(bad)
    loaded = load_settings_checked(tmp_path)
    s = loaded.settings
    assert (s.workspace, s.top_k, s.retrieval) == (str(tmp_path / "mine"), 5, "bm25")
    assert loaded.problem.startswith(f"{path}: damaged (top_k: Input should be less than or equal to 50)")
    assert "top_k is back to the default, the other saved settings are kept" in loaded.problem
    [kept] = kept_copies(path)
    assert kept.read_bytes() == bad
    again = load_settings_checked(tmp_path)  # saved again without the bad field
    assert again.problem is None and again.settings == s and kept_copies(path) == [kept]


def test_save_settings_keeps_a_damaged_file_aside_instead_of_replacing_it(tmp_path):
    path = settings_path(tmp_path)
    path.write_bytes(b"{not json")
    kept = save_settings(Settings(top_k=3), tmp_path)
    assert kept is not None and kept.read_bytes() == b"{not json" and kept_copies(path) == [kept]
    assert load_settings(tmp_path).top_k == 3
    assert save_settings(Settings(top_k=4), tmp_path) is None and kept_copies(path) == [kept]


# ---------------------------------------------------------------- in the app


def unescaped(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def test_the_app_warns_about_damaged_settings_and_documents_and_keeps_working(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    ws.mkdir()
    settings_file = ws / "settings.json"
    settings_file.write_bytes(b'{"top_k": 7, "embedder": ')
    lib = Library(ws / "uploads", new_library_id())
    lib.add([("kettle.txt", b"Descale monthly."), ("fan.txt", b"Clean the blades.")])
    (lib.texts / "fan.json").write_bytes(b"\x00\x00")

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["lib"] = lib.id
    at.run()
    assert not at.exception and at.title[0].value == "ChunkLens"
    warnings = [unescaped(w.value) for w in at.warning]
    [kept_settings] = kept_copies(settings_file)
    [kept_text] = kept_copies(lib.texts / "fan.json")
    assert warnings[0].startswith(f"{settings_file}: damaged (not valid JSON") and kept_settings.name in warnings[0]
    text_file = lib.texts / "fan.json"
    assert warnings[1].startswith(f"{text_file}: damaged (not valid JSON") and kept_text.name in warnings[1]
    assert len(warnings) == 2
    assert "This library holds 1 document(s)" in at.caption[1].value

    at.run()  # the next run (any click): still shown until dismissed, and nothing is copied again
    assert [unescaped(w.value) for w in at.warning] == warnings
    [dismiss] = [b for b in at.button if b.label == "Dismiss these messages"]
    dismiss.click().run()
    assert not at.warning and not at.exception
    assert kept_copies(settings_file) == [kept_settings] and kept_copies(lib.texts / "fan.json") == [kept_text]
    assert kept_settings.read_bytes() == b'{"top_k": 7, "embedder": '
    at.switch_page("pages/documents.py").run()
    assert not at.exception and list(at.dataframe[0].value["doc_id"]) == ["kettle"]


def test_workspace_files_nested_too_deeply_are_kept_aside_not_a_traceback(tmp_path):
    """A RecursionError is not a ValueError: the readers of the library's order, the settings and a CNM edit log
    take text nested 100,000 deep for damaged like any other bad JSON."""
    from core.ingest.library import Library
    from core.methods.chop.edits import EditLog

    deep = b"[" * 100_000
    lib = Library(tmp_path / "uploads", "abcdef123456")
    lib.root.mkdir(parents=True)  # a library's folder is made by its first write
    (lib.root / "order.json").write_bytes(deep)
    assert lib.documents() == [] and "nested too deeply" in lib.problems[0]
    settings_path(tmp_path).write_bytes(deep)
    assert "nested too deeply" in load_settings_checked(tmp_path).problem
    log = EditLog(tmp_path / "edits")
    log.path("a" * 32).parent.mkdir(parents=True, exist_ok=True)
    log.path("a" * 32).write_bytes(deep)
    assert log.batches("a" * 32) == [] and "nested too deeply" in log.problems[0]
