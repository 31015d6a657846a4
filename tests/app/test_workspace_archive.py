"""Export / import of a library as one zip: a round trip into a fresh workspace keeps documents and hand edits,
recomputes chunk runs and hands the settings back without saving them; an import merges into its own library
only and never overwrites; hostile archives are refused before anything is written. Real files throughout (the
sample set, real chunkers, zipfile-built archives)."""

from __future__ import annotations

import io
import json
import random
import zipfile

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.workspace import Workspace
from core.ingest.library import Library, new_library_id
from core.ingest.safezip import ArchiveError, ZipLimits
from core.methods.chop.edits import CnmEdit, EditLog, apply_edits
from core.methods.chop.rules import RuleCnm
from core.outputs.archive import export_archive, import_archive
from core.pipeline import chunk_documents, run_key
from core.settings import Settings, load_settings, save_settings
from core.workbench import sample_folder
from tests.support.archives import DOC, HOSTILE, archive

CANARY = "sk-test-CANARY-archive-4f1c9e"


def files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def content(chunks) -> list[tuple]:
    """What a run is made of (spans, prefixes, tags, decisions), without the seconds each tag took."""
    return [(c.chunk_id, c.start, c.end, c.prefix, c.meta.get("cnm"), c.meta.get("continuity")) for c in chunks]


@pytest.fixture()
def source(tmp_path):
    """A workspace with one library: the sample set plus an upload, two cached chunk runs, a saved hand edit
    of CHOP's tags, and saved settings."""
    ws = Workspace.open(tmp_path / "a")
    lib = Library(ws.uploads, new_library_id())
    lib.load_dataset(sample_folder())
    lib.add([("notes.md", "# Notes\n\nDescale the kettle monthly. Ünïcode kept.".encode())])
    docs = lib.documents()
    context = ChunkerContext(llm=RuleCnm())
    runs = {}
    for spec in ("naive-500t", "chop"):
        chunker = make_chunker(spec, context)
        runs[spec] = chunk_documents(docs, chunker, ws.chunk_runs)
    chop = runs["chop"]
    edit = CnmEdit(chop.chunks[3].chunk_id, cnm={"category": "fan", "nouns": ["fan blade"], "model": "ZZ9",
                                                  "confidence": 1.0})
    EditLog(lib.edits_dir).append(run_key(docs, chop.identity), "chop", [edit])
    settings = Settings(workspace=str(ws.root), top_k=7, model_name="gpt-x", max_upload_mb=12)
    save_settings(settings, ws.root)
    return ws, lib, runs, settings


def test_round_trip_into_a_fresh_workspace(source, tmp_path, monkeypatch):
    ws, lib, runs, settings = source
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)  # a key in the environment never reaches an export
    data = export_archive(ws, settings, [lib.id], operator_fields=True)  # a local server's own export: all of it
    assert CANARY.encode() not in data
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert manifest["format"] == "chunklens-archive" and manifest["version"] == 1
        assert manifest["libraries"] == {lib.id: 8} and manifest["chunk_runs"] == 2
        assert all(CANARY.encode() not in zf.read(n) for n in zf.namelist())  # also inside compressed members
        assert "workspace" not in json.loads(zf.read("settings.json"))

    fresh = Workspace.open(tmp_path / "b")
    mine = Library(fresh.uploads, new_library_id())
    report = import_archive(data, fresh, into=mine.id)
    assert [s.split(" ")[0] for s in report.skipped] == ["chunk", "chunk", "settings:"]
    assert len([a for a in report.added if a.startswith("document")]) == 8
    before, after = lib.documents(), mine.documents()
    assert [(d.doc_id, d.text, d.title, d.source) for d in after] == [(d.doc_id, d.text, d.title, d.source)
                                                                      for d in before]
    assert sorted(p.name for p in mine.originals.iterdir()) == ["notes.md"]
    assert mine.dataset() is not None and len(mine.dataset().questions) == 56  # the sample set's questions
    assert files(fresh.chunk_runs) == {}  # runs are never imported into the shared run cache
    context = ChunkerContext(llm=RuleCnm())
    for spec, run in runs.items():  # recomputed from the imported documents: the same chunks
        again = chunk_documents(after, make_chunker(spec, context), fresh.chunk_runs)
        assert not again.from_cache and content(again.chunks) == content(run.chunks)
    key = run_key(after, runs["chop"].identity)
    [[edit]] = EditLog(mine.edits_dir).batches(key)
    edited, changed = apply_edits(runs["chop"].chunks, [edit], RuleCnm())
    assert changed > 0 and edited[3].meta["cnm"]["model"] == "ZZ9"
    assert not (fresh.root / "settings.json").exists()  # handed back, never saved
    imported = report.settings
    assert imported.model_dump(exclude={"workspace"}) == settings.model_dump(exclude={"workspace"})
    assert imported.workspace == str(fresh.root)


def test_import_merges_and_never_overwrites(source, tmp_path):
    ws, lib, _, settings = source
    data = export_archive(ws, settings, [lib.id])
    target = Workspace.open(tmp_path / "b")
    save_settings(Settings(workspace=str(target.root), top_k=3), target.root)
    mine = Library(target.uploads, new_library_id())
    mine.add([("notes.md", b"# My own notes\n\nNot the archive's.")])
    report = import_archive(data, target, into=mine.id)
    assert "document notes: already here with other text; this library's own was kept" in report.skipped
    assert "settings: not applied (an import never changes the saved settings)" in report.skipped
    assert load_settings(target.root).top_k == 3 and report.settings.top_k == 7
    assert [d.text for d in mine.documents() if d.doc_id == "notes"] == ["# My own notes\n\nNot the archive's."]
    assert len(mine.documents()) == 8
    snapshot = files(target.root)
    again = import_archive(data, target, into=mine.id)
    assert again.added == [] and files(target.root) == snapshot  # a second import adds nothing, changes nothing
    assert sum(s.startswith("chunk run") for s in again.skipped) == 2


def test_an_uploaded_qa_set_travels_with_its_library(tmp_path):
    """A set uploaded on the Benchmark page (not the bundled sample) is exported as its questions and comes
    back attached to the imported documents; questions that do not fit the documents are refused, not half
    imported."""
    ws = Workspace.open(tmp_path / "a")
    lib = Library(ws.uploads, new_library_id())
    corpus = "\n".join(json.dumps({"doc_id": d, "title": d.upper(), "text": t}) for d, t in [
        ("kettle", "Descale the kettle every month with citric acid."), ("fan", "The fan has three speeds.")])
    questions = "\n".join(json.dumps(q) for q in [
        {"qid": "q1", "question": "How often do I descale?", "references": [{"doc_id": "kettle", "start": 0,
                                                                          "end": 31}], "product": "K1"},
        {"qid": "q2", "question": "How many speeds?", "references": [{"doc_id": "fan", "start": 4, "end": 25}],
         "answer": "three", "difficulty": "easy"}])
    lib.load_uploaded_dataset("my set", corpus.encode(), questions.encode())
    before = lib.dataset()
    data = export_archive(ws, None, [lib.id])
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert json.loads(zf.read(f"libraries/{lib.id}/dataset.json")) == {"name": "my-set"}

    fresh = Workspace.open(tmp_path / "b")
    mine = Library(fresh.uploads, new_library_id())
    report = import_archive(data, fresh, into=mine.id)
    assert "QA set my-set: 2 questions" in report.added and report.skipped == []
    after = mine.dataset()
    assert [d.text for d in after.documents] == [d.text for d in before.documents]
    assert after.questions == before.questions
    assert [q.extra for q in after.questions] == [{}, {"difficulty": "easy"}]
    again = import_archive(data, fresh, into=mine.id)
    assert "QA set: this library has its own; kept it" in again.skipped

    broken = io.BytesIO()  # the same archive, with a gold span past the end of its document
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename.endswith("questions.jsonl"):
                body = body.replace(b'"end": 25', b'"end": 2500')
            dst.writestr(item, body)
    other = Library(fresh.uploads, new_library_id())
    report = import_archive(broken.getvalue(), fresh, into=other.id)
    [refused] = [s for s in report.skipped if s.startswith("QA set")]
    assert "outside 'fan'" in refused and other.dataset_folder() is None
    assert len(other.documents()) == 2  # the documents are imported all the same


def test_a_library_export_holds_only_its_own_runs(source):
    ws, lib, _, settings = source
    other = Library(ws.uploads, new_library_id())
    other.add([("private.txt", b"Only the other library may see this sentence about the secret prototype.")])
    chunk_documents(other.documents(), make_chunker("naive-500t", ChunkerContext()), ws.chunk_runs)
    data = export_archive(ws, settings, [lib.id])
    assert b"secret prototype" not in data
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert not any(n.startswith(f"libraries/{other.id}") for n in zf.namelist())
        texts = b"".join(zf.read(n) for n in zf.namelist())
        assert b"secret prototype" not in texts
    everything = export_archive(ws, settings)  # the whole workspace: both libraries, all three runs
    with zipfile.ZipFile(io.BytesIO(everything)) as zf:
        assert json.loads(zf.read("manifest.json"))["libraries"] == {lib.id: 8, other.id: 1}
        assert len([n for n in zf.namelist() if n.startswith("chunk_runs/")]) == 3


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_archives_are_refused_before_anything_is_written(case, tmp_path):
    data, message = HOSTILE[case]
    ws = Workspace.open(tmp_path / "ws")
    Library(ws.uploads, "abcdef12").add([("mine.txt", b"My own document.")])
    before = files(tmp_path)
    with pytest.raises(ArchiveError, match=message):
        import_archive(data, ws)
    assert files(tmp_path) == before
    assert not (tmp_path / "evil.json").exists() and not (tmp_path.parent / "evil.json").exists()


def test_size_limits_come_from_the_central_directory(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    random_bytes = bytes(range(256)) * 4096  # 1 MB that barely compresses: only the total limit can refuse it
    data = archive({f"libraries/abcdef12/originals/d{i}.txt": random_bytes for i in range(3)})
    with pytest.raises(ArchiveError, match=r"would unpack to over 2\.0 MB"):
        import_archive(data, ws, limits=ZipLimits(max_total_bytes=2 * 2**20))
    with pytest.raises(ArchiveError, match="holds 4 members, over the limit of 3"):
        import_archive(data, ws, limits=ZipLimits(max_members=3))
    assert list(ws.uploads.iterdir()) == []


def test_unknown_members_and_bad_records_are_left_out_and_reported(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    data = archive({
        "libraries/abcdef12/order.json": json.dumps(["a", "b", "c"]).encode(),
        "libraries/abcdef12/texts/a.json": DOC,
        "libraries/abcdef12/texts/b.json": b"not json",
        "libraries/abcdef12/texts/c.json": json.dumps({"doc_id": "other", "text": "x"}).encode(),
        "libraries/abcdef12/originals/a.exe": b"MZ",
        "chunk_runs/" + "0" * 32 + ".json": b"[]",
        "README.txt": b"hello",
        "settings.json": json.dumps({"top_k": 9, "api_key": CANARY, "workspace": "/elsewhere"}).encode(),
    })
    report = import_archive(data, ws)
    assert report.added == ["document a"] and report.settings.top_k == 9
    assert "README.txt: not part of a ChunkLens archive (left out)" in report.skipped
    assert "document c: not a document record (left out)" in report.skipped
    assert "chunk run 00000000: left out (runs are recomputed here, so an import changes only this library)" \
        in report.skipped
    assert any("not valid JSON" in s for s in report.skipped)
    lib = Library(ws.uploads, "abcdef12")
    assert [d.doc_id for d in lib.documents()] == ["a"] and list(lib.originals.iterdir()) == []
    assert not (ws.root / "settings.json").exists()
    returned = report.settings.model_dump_json()
    assert CANARY not in returned and "/elsewhere" not in returned and report.settings.workspace == str(ws.root)


def test_settings_have_no_place_for_a_key():
    """settings.json is key-free by construction: no field could hold a key, and one given is dropped."""
    assert not [f for f in Settings.model_fields if any(w in f for w in ("key", "token", "secret", "password"))]
    assert CANARY not in Settings.model_validate({"api_key": CANARY, "openai_api_key": CANARY}).model_dump_json()


def test_an_import_never_changes_another_librarys_runs(source, tmp_path):
    """Two libraries in one workspace hold the same documents; B imports an archive whose CHOP run was altered
    (other prefixes and tags). The run cache is keyed by documents and chunker, not by library: had the import
    written the run there, A's next chop run would be the archive's. A must get its own chunking."""
    ws_a, lib, runs, settings = source
    data = export_archive(ws_a, settings, [lib.id])
    altered, forged = io.BytesIO(), 0
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(altered, "w") as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename.startswith("chunk_runs/"):
                run = json.loads(body)
                for c in run["chunks"]:
                    if c.get("prefix"):
                        c["prefix"] = "[Category: forged | Model: EVIL-1]"
                        c["meta"]["cnm"]["model"] = "EVIL-1"
                        forged += 1
                body = json.dumps(run).encode()
            dst.writestr(item, body)
    assert forged > 0

    ws = Workspace.open(tmp_path / "shared")
    a, b = Library(ws.uploads, new_library_id()), Library(ws.uploads, new_library_id())
    a.load_dataset(sample_folder())
    a.add([("notes.md", "# Notes\n\nDescale the kettle monthly. Ünïcode kept.".encode())])
    report = import_archive(altered.getvalue(), ws, into=b.id)
    assert [d.text for d in b.documents()] == [d.text for d in a.documents()]  # B got the same documents
    assert not any(s.startswith("chunk run") for s in report.added)
    chop = chunk_documents(a.documents(), make_chunker("chop", ChunkerContext(llm=RuleCnm())), ws.chunk_runs)
    assert not chop.from_cache and "EVIL-1" not in json.dumps([c.to_dict() for c in chop.chunks])
    assert content(chop.chunks) == content(runs["chop"].chunks)


def test_an_archive_and_its_members_are_held_to_the_upload_limits(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    big = random.Random(0).randbytes(600_000).hex()  # 1.2 MB that compresses 2:1: over a 1 MB per-file limit
    data = archive({
        "libraries/abcdef12/texts/a.json": DOC,
        "libraries/abcdef12/texts/big.json": json.dumps({"doc_id": "big", "title": "big", "text": big}).encode(),
        "libraries/abcdef12/originals/a.txt": big.encode(),
    })
    with pytest.raises(ArchiveError, match=r"the archive is 1\.\d MB, over the 1 KB limit for ChunkLens archives"):
        import_archive(data, ws, max_archive_bytes=1024)
    assert list(ws.uploads.iterdir()) == []
    report = import_archive(data, ws, max_file_bytes=2**20)
    assert report.added == ["document a"]
    assert "libraries/abcdef12/texts/big.json: 1.1 MB, over the 1 MB limit per file (left out)" in report.skipped
    assert "libraries/abcdef12/originals/a.txt: 1.1 MB, over the 1 MB limit per file (left out)" in report.skipped
    assert list(Library(ws.uploads, "abcdef12").originals.iterdir()) == []


def test_importing_through_the_app_never_writes_the_servers_settings(source, tmp_path, monkeypatch):
    """The Documents page's import panel: the archive's settings (top_k 7, another model) are handed back, not
    saved, so every later visitor still gets the server's own settings."""
    from streamlit.testing.v1 import AppTest

    from tests.support.appflow import click
    from tests.support.data import ROOT

    ws_a, lib, _, settings = source
    data = export_archive(ws_a, settings, [lib.id])
    server = tmp_path / "server"
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(server))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="archive_upload").set_value(("lib.zip", data, "application/zip")).run()
    at = click(at, "Import into this library")
    assert not at.exception and not at.error
    assert at.success[0].value.startswith("Imported 10 item(s)")  # 8 documents, the sample's questions, the edits
    assert not (server / "settings.json").exists()
    assert at.session_state["settings"].top_k != 7 and load_settings(server).model_name == ""
