"""Export / import of a library as one zip: a round trip into a fresh workspace keeps documents, chunk runs,
hand edits and settings; an import merges and never overwrites; hostile archives are refused before anything
is written. Real files throughout (the sample set, real chunkers, zipfile-built archives)."""

from __future__ import annotations

import io
import json
import stat
import zipfile

import pytest

from core.archive import export_archive, import_archive
from core.chunkers.base import ChunkerContext, make_chunker
from core.ingest.library import Library, new_library_id
from core.ingest.safezip import ArchiveError, ZipLimits
from core.methods.chop.edits import CnmEdit, EditLog, apply_edits
from core.methods.chop.rules import RuleCnm
from core.pipeline import chunk_documents, run_key
from core.settings import Settings, load_settings, save_settings
from core.workbench import sample_folder
from core.workspace import Workspace

CANARY = "sk-test-CANARY-archive-4f1c9e"


def files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


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
    settings = Settings(workspace=str(ws.root), top_k=7, llm_model="gpt-x", max_upload_mb=12)
    save_settings(settings, ws.root)
    return ws, lib, runs, settings


def test_round_trip_into_a_fresh_workspace(source, tmp_path, monkeypatch):
    ws, lib, runs, settings = source
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)  # a key in the environment never reaches an export
    data = export_archive(ws, settings, [lib.id])
    assert CANARY.encode() not in data
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert manifest["format"] == "chunklens-archive" and manifest["version"] == 1
        assert manifest["libraries"] == {lib.id: 8} and manifest["chunk_runs"] == 2
        assert all(CANARY.encode() not in zf.read(n) for n in zf.namelist())  # also inside compressed members
        assert "workspace" not in json.loads(zf.read("settings.json"))

    fresh = Workspace.open(tmp_path / "b")
    mine = Library(fresh.uploads, new_library_id())
    report = import_archive(data, fresh, into=mine.id, settings_root=fresh.root)
    assert report.skipped == []
    assert len([a for a in report.added if a.startswith("document")]) == 8
    before, after = lib.documents(), mine.documents()
    assert [(d.doc_id, d.text, d.title, d.source) for d in after] == [(d.doc_id, d.text, d.title, d.source)
                                                                      for d in before]
    assert sorted(p.name for p in mine.originals.iterdir()) == ["notes.md"]
    assert mine.dataset() is not None and len(mine.dataset().questions) == 56  # the sample set's questions
    assert files(fresh.chunk_runs) == files(ws.chunk_runs)
    context = ChunkerContext(llm=RuleCnm())
    for spec, run in runs.items():  # the imported runs are the cache hits of the same chunking
        again = chunk_documents(after, make_chunker(spec, context), fresh.chunk_runs)
        assert again.from_cache and [c.to_dict() for c in again.chunks] == [c.to_dict() for c in run.chunks]
    key = run_key(after, runs["chop"].identity)
    [[edit]] = EditLog(mine.edits_dir).batches(key)
    edited, changed = apply_edits(runs["chop"].chunks, [edit], RuleCnm())
    assert changed > 0 and edited[3].meta["cnm"]["model"] == "ZZ9"
    imported = load_settings(fresh.root)
    assert imported.model_dump(exclude={"workspace"}) == settings.model_dump(exclude={"workspace"})
    assert imported.workspace == str(fresh.root)


def test_import_merges_and_never_overwrites(source, tmp_path):
    ws, lib, _, settings = source
    data = export_archive(ws, settings, [lib.id])
    target = Workspace.open(tmp_path / "b")
    save_settings(Settings(workspace=str(target.root), top_k=3), target.root)
    mine = Library(target.uploads, new_library_id())
    mine.add([("notes.md", b"# My own notes\n\nNot the archive's.")])
    report = import_archive(data, target, into=mine.id, settings_root=target.root)
    assert "document notes: already here with other text; this library's own was kept" in report.skipped
    assert "settings: this workspace has its own; kept them" in report.skipped
    assert load_settings(target.root).top_k == 3
    assert [d.text for d in mine.documents() if d.doc_id == "notes"] == ["# My own notes\n\nNot the archive's."]
    assert len(mine.documents()) == 8
    snapshot = files(target.root)
    again = import_archive(data, target, into=mine.id, settings_root=target.root)
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


def archive(members: dict[str, bytes], manifest: dict | None = None, extra=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest or {"format": "chunklens-archive", "version": 1}))
        for name, data in members.items():
            zf.writestr(name, data)
        if extra:
            extra(zf)
    return buf.getvalue()


def symlink(zf: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("libraries/abcdef12/texts/link.json")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(info, "/etc/passwd")


def mark_encrypted(data: bytes, name: str) -> bytes:
    """The archive with `name` flagged as encrypted in its central directory (zipfile cannot write that flag)."""
    out = bytearray(data)
    pos = out.find(b"PK\x01\x02")
    while pos != -1:
        name_len = int.from_bytes(out[pos + 28:pos + 30], "little")
        if out[pos + 46:pos + 46 + name_len] == name.encode():
            out[pos + 8] |= 0x1
        pos = out.find(b"PK\x01\x02", pos + 4)
    return bytes(out)


DOC = json.dumps({"doc_id": "a", "title": "a", "text": "Filter monthly."}).encode()
HOSTILE = {
    "absolute": (archive({"/etc/cron.d/evil": b"x"}), "is an absolute path"),
    "drive": (archive({"C:/evil.txt": b"x"}), "is an absolute path"),
    "dotdot": (archive({"libraries/abcdef12/../../../evil.json": DOC}), "'..' path part"),
    "backslash": (archive({"libraries\\..\\evil.json": DOC}), "backslash"),
    "symlink": (archive({}, extra=symlink), "is a symbolic link"),
    "encrypted": (mark_encrypted(archive({"libraries/abcdef12/texts/a.json": DOC}), "libraries/abcdef12/texts/a.json"),
                  "is encrypted"),
    "version-2": (archive({"libraries/abcdef12/texts/a.json": DOC}, {"format": "chunklens-archive", "version": 2}),
                  "format version 2 is not one this ChunkLens reads"),
    "no-version": (archive({}, {"format": "chunklens-archive"}), "format version None"),
    "other-format": (archive({}, {"format": "something", "version": 1}), "names another format"),
    "no-manifest": (b"PK\x05\x06" + b"\x00" * 18, "no manifest.json"),  # an empty zip
    "not-a-zip": (b"just some text", "not a readable zip archive"),
    "bomb": (archive({"libraries/abcdef12/texts/a.json": b" " * (8 * 2**20)}), "compressed"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_archives_are_refused_before_anything_is_written(case, tmp_path):
    data, message = HOSTILE[case]
    ws = Workspace.open(tmp_path / "ws")
    Library(ws.uploads, "abcdef12").add([("mine.txt", b"My own document.")])
    before = files(tmp_path)
    with pytest.raises(ArchiveError, match=message):
        import_archive(data, ws, settings_root=ws.root)
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
    report = import_archive(data, ws, settings_root=ws.root)
    assert report.added == ["document a", "settings"]
    assert "README.txt: not part of a ChunkLens archive (left out)" in report.skipped
    assert "document c: not a document record (left out)" in report.skipped
    assert any(s.startswith("chunk run 00000000: not readable") for s in report.skipped)
    assert any("not valid JSON" in s for s in report.skipped)
    lib = Library(ws.uploads, "abcdef12")
    assert [d.doc_id for d in lib.documents()] == ["a"] and list(lib.originals.iterdir()) == []
    saved = (ws.root / "settings.json").read_text()
    assert load_settings(ws.root).top_k == 9 and CANARY not in saved and "/elsewhere" not in saved


def test_settings_have_no_place_for_a_key():
    """settings.json is key-free by construction: no field could hold a key, and one given is dropped."""
    assert not [f for f in Settings.model_fields if any(w in f for w in ("key", "token", "secret", "password"))]
    assert CANARY not in Settings.model_validate({"api_key": CANARY, "openai_api_key": CANARY}).model_dump_json()
