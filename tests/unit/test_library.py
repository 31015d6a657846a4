"""A library never loses what it holds to a bad input: a batch with bad files keeps the good ones, a bad qa-spans
set leaves the loaded set in place, and the upload limit is a setting that reaches the loader."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.infra.errors import DatasetError, SetExists
from core.ingest.library import Library, new_library_id
from core.settings import Settings, load_settings, save_settings
from tests.support.corpora import DOCS, GOOD_QS, jsonl
from tests.support.docx_files import docx_bytes, zip_with_document_xml
from tests.support.pdfs import encrypt_pdf, make_pdf


@pytest.fixture()
def lib(tmp_path):
    return Library(tmp_path / "uploads", new_library_id())


def test_a_batch_with_bad_files_keeps_the_good_ones(lib):
    lib.add([("kept.md", b"# Already here\n\nLoaded before the batch.")])
    batch = [
        ("fan.txt", b"Clean the fan blades monthly."),
        ("empty.txt", b""),
        ("blank.md", b" \n\t\n"),
        ("locked.pdf", encrypt_pdf(make_pdf(["secret"]), "pw")),
        ("camera.pdf", make_pdf(["Charge the battery for two hours."])),
        ("bomb.docx", zip_with_document_xml(300, b"<w:p/>" * (2**20 // 6))),
        ("remote.docx", docx_bytes("Insert two AAA batteries.")),
        ("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
        ("legacy.txt", "Température réglée à 25 °C".encode("cp1252")),
    ]
    result = lib.add(batch)
    assert [d.doc_id for d in result.added] == ["fan", "camera", "remote", "legacy"]
    assert [e.split(":")[0] for e in result.errors] == ["empty.txt", "blank.md", "locked.pdf", "bomb.docx",
                                                       "photo.txt"]
    assert all("\n" not in e for e in result.errors)
    assert result.notes == ["legacy.txt: not UTF-8; read as Windows-1252 (Western European)"]
    docs = {d.doc_id: d for d in lib.documents()}
    assert list(docs) == ["kept", "fan", "camera", "remote", "legacy"]
    assert docs["legacy"].text == "Température réglée à 25 °C" and docs["legacy"].notes == result.notes
    assert sorted(p.name for p in lib.originals.iterdir()) == ["camera.pdf", "fan.txt", "kept.md", "legacy.txt",
                                                               "remote.docx"]


def test_the_upload_limit_reaches_the_loader(lib):
    result = lib.add([("small.txt", b"x" * 1000), ("large.txt", b"y" * 3000)], max_bytes=2048)
    assert [d.doc_id for d in result.added] == ["small"]
    assert result.errors == ["large.txt: 3 KB is over the 2 KB upload limit (setting max_upload_mb)"]


def test_upload_limit_setting_is_bounded_and_saved(tmp_path):
    assert Settings().max_upload_mb == 50 and Settings().max_upload_bytes == 50 * 2**20
    assert Settings(max_upload_mb=200).max_upload_bytes == 200 * 2**20
    for bad in (0, 2049):
        with pytest.raises(ValidationError):
            Settings(max_upload_mb=bad)
    save_settings(Settings(max_upload_mb=300), tmp_path)
    assert load_settings(tmp_path).max_upload_mb == 300


OUTSIDE_QS = [{"qid": "1", "question": "When?", "references": [{"doc_id": "a", "start": 5, "end": 999}]}]


def test_a_qa_set_with_spans_outside_its_documents_changes_nothing(lib):
    root = lib.sets_dir
    ds = lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS)).dataset
    assert ds.name == "my-set" and len(ds.questions) == 1
    saved = {p.name: p.read_bytes() for p in (root / "my-set").iterdir()}
    with pytest.raises(DatasetError, match=r"^my-set/questions.jsonl:1: span 5-999 is outside 'a'$"):
        lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(OUTSIDE_QS), replace=True)
    assert {p.name: p.read_bytes() for p in (root / "my-set").iterdir()} == saved
    assert [p.name for p in root.iterdir()] == ["my-set"]  # no scratch folder left behind
    kept = lib.dataset()
    assert kept is not None and [q.qid for q in kept.questions] == ["1"]
    assert [d.doc_id for d in lib.documents()] == ["a", "b"]


def test_a_bad_qa_folder_keeps_uploaded_documents(lib, tmp_path):
    lib.add([("fan.txt", b"Clean the fan blades monthly.")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "corpus.jsonl").write_bytes(jsonl(DOCS))
    (bad / "questions.jsonl").write_bytes(jsonl(OUTSIDE_QS))
    with pytest.raises(DatasetError, match="is outside 'a'"):
        lib.load_dataset(bad)
    assert [d.doc_id for d in lib.documents()] == ["fan"]


def test_loading_a_set_adds_to_the_library_and_never_removes_an_upload(lib, tmp_path):
    from tests.support.pdfs import make_pdf

    lib.add([("manual.pdf", make_pdf(["Page one of my manual.", "Page two."])), ("a.txt", b"My own a.")])
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_bytes(jsonl(DOCS))
    (folder / "questions.jsonl").write_bytes(jsonl(GOOD_QS))
    loaded = lib.load_dataset(folder)
    # the uploads are all still there, pages included; the set's "b" was added, its "a" clashes with the upload
    assert [d.doc_id for d in lib.documents()] == ["manual", "a", "b"]
    assert lib.documents()[0].page_starts == [0, 24] and lib.documents()[1].text == "My own a."
    assert (loaded.added, loaded.present, loaded.conflicts) == (["b"], [], ["a"])
    assert [q.qid for q in loaded.dataset.questions] == ["1"]  # its gold lies in "b", which is the set's own
    message = loaded.message()
    assert "Loaded 1 documents" in message and "other 2 document(s) are kept" in message and ": a (" in message
    again = lib.load_dataset(folder)  # loading it again adds nothing and still removes nothing
    assert again.added == [] and again.present == ["b"] and len(lib.documents()) == 3


HOSTILE_NAMES = [
    ("../../etc/passwd.txt", "passwd.txt", "passwd"),
    ("/abs/path.txt", "path.txt", "path"),
    ("a/b\\c.txt", "c.txt", "c"),
    ("..\\..\\windows\\win.ini.txt", "win.ini.txt", "win.ini"),
    ("nul\x00name.txt", "nulname.txt", "nulname"),
    ("new\nline\r.md", "newline.md", "newline"),
    ("..txt", "..txt", "document"),
    ("x" * 5000 + ".txt", "x" * 116 + ".txt", "x" * 80),
]


@pytest.mark.parametrize(("name", "kept_as", "doc_id"), HOSTILE_NAMES, ids=[n[:20] for n, _, _ in HOSTILE_NAMES])
def test_uploaded_file_names_cannot_leave_the_library(tmp_path, name, kept_as, doc_id):
    uploads = tmp_path / "ws" / "uploads"
    lib = Library(uploads, new_library_id())
    result = lib.add([(name, b"Clean the filter every two weeks.")])
    assert result.errors == [] and [d.doc_id for d in result.added] == [doc_id]
    assert result.added[0].source == kept_as and result.added[0].title == kept_as.rsplit(".", 1)[0]
    everything = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    suffix = kept_as.rsplit(".", 1)[1]
    kept = [".lock", "order.json", f"originals/{doc_id}.{suffix}", f"texts/{doc_id}.json"]  # .lock: the library's
    assert everything == [f"ws/uploads/{lib.id}/{name}" for name in kept]
    assert lib.documents()[0].text == "Clean the filter every two weeks."


def test_a_bad_name_in_a_batch_is_one_line_and_the_rest_load(lib):
    result = lib.add([("evil\n/../../x.exe", b"MZ"), ("ok.txt", b"fine")])
    assert [d.doc_id for d in result.added] == ["ok"]
    assert result.errors == ["x.exe: unsupported file type '.exe' (use .txt, .md, .markdown, .pdf, .docx)"]


def test_removing_a_document_keeps_one_whose_name_starts_with_its_id(lib):
    lib.add([("manual.txt", b"The first manual."), ("manual.v2.txt", b"The second manual.")])
    lib.remove("manual")
    assert [d.doc_id for d in lib.documents()] == ["manual.v2"]
    assert lib.documents()[0].text == "The second manual."
    assert sorted(p.name for p in lib.originals.iterdir()) == ["manual.v2.txt"]


def test_a_doc_id_with_glob_characters_removes_only_its_own_files(lib, tmp_path):
    lib.add([("fan.txt", b"Clean the fan blades monthly."), ("f1.txt", b"One more.")])
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_bytes(jsonl([{"doc_id": "f*", "text": "Starred."},
                                                 {"doc_id": "f[a1]", "text": "Bracketed."}]))
    (folder / "questions.jsonl").write_bytes(jsonl([{"question": "?", "references": [{"doc_id": "f*", "start": 0,
                                                                                       "end": 4}]}]))
    lib.load_dataset(folder)
    lib.remove("f*")
    lib.remove("f[a1]")
    assert [d.doc_id for d in lib.documents()] == ["fan", "f1"]
    assert sorted(p.name for p in lib.originals.iterdir()) == ["f1.txt", "fan.txt"]
    lib.clear()
    assert list(lib.originals.iterdir()) == [] and lib.documents() == []


OTHER_QS = [{"qid": "9", "question": "How often?", "references": [{"doc_id": "a", "start": 0, "end": 6}]}]


def test_two_libraries_keep_their_own_set_of_the_same_name(tmp_path):
    uploads = tmp_path / "uploads"
    first, second = Library(uploads, new_library_id()), Library(uploads, new_library_id())
    first.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS))
    second.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(OTHER_QS))
    assert [q.qid for q in Library(uploads, first.id).dataset().questions] == ["1"]
    assert [q.qid for q in Library(uploads, second.id).dataset().questions] == ["9"]


def test_a_set_of_the_same_name_is_replaced_only_when_asked(lib):
    lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS))
    saved = files_under(lib.sets_dir)
    with pytest.raises(SetExists, match=r"^this library already has a QA set named 'my-set': replace it, or give"):
        lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(OTHER_QS))
    assert [q.qid for q in lib.dataset().questions] == ["1"] and files_under(lib.sets_dir) == saved
    loaded = lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(OTHER_QS), replace=True)
    assert [q.qid for q in loaded.dataset.questions] == ["9"] and loaded.dataset.name == "my-set"
    assert [q.qid for q in Library(lib.root.parent, lib.id).dataset().questions] == ["9"]
    assert sorted(p.name for p in lib.sets_dir.iterdir()) == ["my-set"]  # the replaced set is gone, no scratch


def files_under(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_set_that_fails_while_its_documents_are_stored_leaves_nothing_behind(lib, tmp_path):
    lib.add([("fan.txt", b"Clean the fan blades monthly.")])
    lib.load_uploaded_dataset("my set", jsonl(DOCS), jsonl(GOOD_QS))
    before = files_under(tmp_path)
    # the second document's id is too long for a file name: storing it fails for real, after the first is stored
    docs = [{"doc_id": "new", "text": "A new document."}, {"doc_id": "c" * 300, "text": "Too long a name."}]
    questions = [{"qid": "7", "question": "New?", "references": [{"doc_id": "new", "start": 0, "end": 5}]}]
    with pytest.raises(DatasetError, match="could not be stored"):
        lib.load_uploaded_dataset("my set", jsonl(docs), jsonl(questions), replace=True)
    assert files_under(tmp_path) == before
    assert [d.doc_id for d in lib.documents()] == ["fan", "a", "b"]
    assert [q.qid for q in lib.dataset().questions] == ["1"]


def test_a_set_that_breaks_the_checker_leaves_no_scratch_folder(lib, tmp_path):
    before = files_under(tmp_path)
    deep = b'{"doc_id": "a", "text": "x", "more": ' + b"[" * 200_000 + b"}\n"
    with pytest.raises((RecursionError, DatasetError)):
        lib.load_uploaded_dataset("my set", deep, jsonl(GOOD_QS))
    assert files_under(tmp_path) == before and [p for p in tmp_path.rglob("*") if ".upload-" in p.name] == []
