"""A library (or the whole workspace) as one zip file to download, and such a file imported back.

Layout, format version 1 (manifest.json says so; any other version is refused):

    manifest.json                        {"format": "chunklens-archive", "version": 1, ...}
    settings.json                        the visitor's choices (a local server's user: all settings but the
                                         workspace path, every address without its credentials)
    libraries/<lib>/order.json           the library's documents in order
    libraries/<lib>/texts/<doc>.json     each document's extracted text
    libraries/<lib>/originals/<doc>.ext  each uploaded file as it came
    libraries/<lib>/dataset.json         {"sample": "qa"} when the library is the bundled sample set, or
                                         {"name": ...} for another QA set, whose questions follow
    libraries/<lib>/questions.jsonl      that set's questions about these documents (qa-spans v1 lines)
    libraries/<lib>/cnm_edits/<run>.json hand-corrected CHOP tags (core.methods.chop.edits.EditLog)
    chunk_runs/<run>.json                cached chunk runs of these documents

Not exported: the Chroma store and the embedding / LLM-answer caches (rebuilt from the above on demand; the
answer cache also holds prompts about other libraries' text), and never an API key: `Settings` has no field
for one, and the key lives only in the environment or a browser session's memory. On a shared server the
operator's settings (addresses, model paths, limits) are not exported at all; where they are (a local server), a
password inside any address, the reranker's too, is dropped (`core.infra.urls.redact_url`).

Import is a merge into one library that never overwrites: what the library already holds is kept and reported as
skipped; only new documents, a QA set and tag edits are added. An import changes nothing outside its library: it
never writes the server's settings (settings in the archive are parsed and returned in the report, for the caller
to offer to its session), and it leaves the archive's chunk runs out of the workspace's shared run cache, where
they would be served to every other library with the same documents (with prefixes and tags of the archive's
making); the runs are recomputed from the imported documents when a chunker runs. The zip is checked as a whole by
`core.ingest.safezip` first (and refused over MAX_ARCHIVE_BYTES): packed sizes measured in the file, every member
inflated once with its bytes counted. A member over the per-file upload limit (as inflated) is left out, and every
member is parsed and validated before it is written under a name this module builds, never under the member's own
name.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.infra.errors import ChunkLensError, DatasetError, DocumentError
from core.infra.jsonio import JsonObject, jsonl_lines, loads_checked
from core.infra.uploads import megabytes
from core.infra.urls import redact_url
from core.infra.workspace import Workspace
from core.ingest.datasets import gold_cnm, joined, questions_jsonl
from core.ingest.documents import MAX_FILE_BYTES, MAX_TEXT_CHARS, SUPPORTED_SUFFIXES, join_documents
from core.ingest.judged import parse_line
from core.ingest.library import Library, valid_doc_id, valid_library_id
from core.ingest.library.shelf import MAX_LIBRARY_TEXT_BYTES
from core.ingest.safezip import ArchiveError, CheckedZip, ZipLimits, open_checked
from core.methods.chop.cnm import CNM
from core.methods.chop.edits import EditLog, stored_edit
from core.schema.documents import Document, Segment, documents_by_id
from core.settings import ADDRESS_FIELDS, SETTINGS_FILE, VISITOR_FIELDS, Settings

FORMAT = "chunklens-archive"
VERSION = 1
#: the largest archive an import reads: a library of a few dozen manuals with their originals. The zip and its
#: largest member are held in memory while it is imported, so this also bounds an import's memory.
MAX_ARCHIVE_BYTES = 200 * 2**20
_RUN = r"[0-9a-f]{32}"
_LIB = r"[a-z0-9]{6,32}"
_DOC = r"[A-Za-z0-9._-]{1,80}"
_MEMBER = re.compile(
    rf"^(?:(?P<settings>settings\.json)|chunk_runs/(?P<run>{_RUN})\.json"
    rf"|libraries/(?P<lib>{_LIB})/(?:(?P<order>order\.json)|(?P<dataset>dataset\.json)|(?P<questions>questions\.jsonl)"
    rf"|(?P<judged>judged\.jsonl)"
    rf"|texts/(?P<text>{_DOC})\.json"
    rf"|originals/(?P<original>{_DOC})|cnm_edits/(?P<edits>{_RUN})\.json))$"
)

#: the kinds of member under libraries/<lib>/ (named groups of _MEMBER)
_LIBRARY_PARTS = ("order", "dataset", "questions", "judged", "text", "original", "edits")


@dataclass
class ImportReport:
    """What an import did, in lines for people."""

    added: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: the archive's settings, checked (with this workspace's path), for the caller to offer; never saved by import
    settings: Settings | None = None


def sample_folder() -> Path:
    """The bundled sample set (`core.workbench.sample_folder`'s, which this layer may not import)."""
    return Path(__file__).resolve().parents[2] / "sample_data" / "qa"


# ---------------------------------------------------------------- export


def _library_texts(lib: Library) -> dict[str, str]:
    """Every text a chunk run of this library can be cut from: its documents, joined or not, and the joined
    stream of the QA set it came from."""
    docs = lib.documents()
    texts = {d.doc_id: d.text for d in docs}
    if len(docs) > 1:
        texts["stream"] = join_documents(docs, doc_id="stream").text
    ds = lib.dataset()
    if ds is not None and ds.documents:
        stream = joined(ds).documents[0]
        texts[stream.doc_id] = stream.text
    return texts


def _run_belongs(path: Path, texts: dict[str, str]) -> bool:
    """A cached run goes into a library's export only when every chunk is a span of that library's text, so an
    export never carries another library's words."""
    try:
        chunks = loads_checked(path.read_bytes())["chunks"]
        return bool(chunks) and all(
            c["doc_id"] in texts and texts[c["doc_id"]][c["start"]:c["end"]] == c["text"] for c in chunks)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def exported_settings(settings: Settings, operator_fields: bool = False) -> JsonObject:
    """The settings as an archive carries them: a visitor's choices (VISITOR_FIELDS) only, unless the exporter is
    the operator (`operator_fields`: a local server's one user), whose fields then follow with every address
    (ADDRESS_FIELDS, `rerank_model` among them) stripped of its credentials. Never the workspace path. On a
    shared server the operator's addresses, model paths and limits are not the visitor's to carry away."""
    names = [n for n in Settings.model_fields if n != "workspace" and (operator_fields or n in VISITOR_FIELDS)]
    data = settings.model_dump(mode="json", include=set(names))
    data.update({k: redact_url(data[k]) for k in ADDRESS_FIELDS if data.get(k)})
    return data


def _settings_json(settings: Settings, operator_fields: bool) -> str:
    return json.dumps(exported_settings(settings, operator_fields), indent=2)


def _write_library(zf: zipfile.ZipFile, lib: Library) -> int:
    base = f"libraries/{lib.id}"
    docs = lib.documents()
    zf.writestr(f"{base}/order.json", json.dumps([d.doc_id for d in docs]))
    for d in docs:
        zf.write(lib.texts / f"{d.doc_id}.json", f"{base}/texts/{d.doc_id}.json")
        for original in lib.originals_of(d.doc_id):  # by exact name: a doc id is never a glob pattern
            if original.suffix in SUPPORTED_SUFFIXES:
                zf.write(original, f"{base}/originals/{original.name}")
    folder = lib.dataset_folder()
    if folder is not None and folder.resolve() == sample_folder().resolve():
        zf.writestr(f"{base}/dataset.json", json.dumps({"sample": "qa"}))
    elif folder is not None and (ds := lib.dataset(with_judged=False)) is not None and ds.questions:
        zf.writestr(f"{base}/dataset.json", json.dumps({"name": ds.name}))
        zf.writestr(f"{base}/questions.jsonl", questions_jsonl(ds.questions))
    if lib.judged.path.is_file():
        zf.write(lib.judged.path, f"{base}/judged.jsonl")
    log = EditLog(lib.edits_dir)
    for key in log.run_keys():
        zf.write(log.path(key), f"{base}/cnm_edits/{key}.json")
    return len(docs)


def export_archive(ws: Workspace, settings: Settings | None = None, lib_ids: Sequence[str] | None = None, *,
                   operator_fields: bool = False) -> bytes:
    """The zip of the named libraries (all of the workspace's when None), their chunk runs and edits, and the
    settings (`exported_settings`: the operator's fields only with `operator_fields`). For one library only the
    runs cut from its own text are included."""
    ids = sorted(p.name for p in ws.uploads.iterdir() if valid_library_id(p.name)) if lib_ids is None \
        else list(lib_ids)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        libraries, texts = {}, {}
        for lib_id in ids:
            lib = Library(ws.uploads, lib_id)
            libraries[lib_id] = _write_library(zf, lib)
            texts[lib_id] = _library_texts(lib)
        runs = 0
        for path in sorted(ws.chunk_runs.glob("*.json")):
            ours = lib_ids is None or any(_run_belongs(path, t) for t in texts.values())
            if re.fullmatch(_RUN, path.stem) and ours:
                zf.write(path, f"chunk_runs/{path.name}")
                runs += 1
        if settings is not None:
            zf.writestr(SETTINGS_FILE, _settings_json(settings, operator_fields))
        manifest = {"format": FORMAT, "version": VERSION, "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "libraries": libraries, "chunk_runs": runs, "settings": settings is not None}
        zf.writestr("manifest.json", json.dumps(manifest, indent=2))
    return buf.getvalue()


# ---------------------------------------------------------------- import


def _json(zf: CheckedZip, info: zipfile.ZipInfo) -> Any:
    try:
        return loads_checked(zf.read(info), info.filename[:80])
    except ValueError as exc:  # also a member nested too deeply to parse (a RecursionError inside)
        raise ChunkLensError(str(exc)) from None


def _manifest(zf: CheckedZip, members: dict[str, zipfile.ZipInfo]) -> JsonObject:
    if "manifest.json" not in members:
        raise ArchiveError("not a ChunkLens archive (no manifest.json)")
    try:
        manifest = _json(zf, members["manifest.json"])
    except ChunkLensError as exc:
        raise ArchiveError(str(exc)) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError("not a ChunkLens archive (manifest.json names another format)")
    if manifest.get("version") != VERSION:
        raise ArchiveError(f"archive format version {str(manifest.get('version'))[:20]} is not one this ChunkLens "
                           f"reads (version {VERSION})")
    return manifest


def _document(data: Any, doc_id: str) -> Document:
    if not isinstance(data, dict) or data.get("doc_id") != doc_id or not isinstance(data.get("text"), str):
        raise ChunkLensError(f"document {doc_id}: not a document record")
    try:
        doc = Document(doc_id=doc_id, title=str(data.get("title") or doc_id), text=data["text"],
                       source=str(data.get("source") or ""),
                       page_starts=[int(x) for x in data.get("page_starts") or []],
                       segments=[Segment(**s) for s in data.get("segments") or []],
                       notes=[str(n) for n in data.get("notes") or []],
                       outline=[(int(o), int(lv), str(t)) for o, lv, t in data.get("outline") or []],
                       cnm=gold_cnm(data.get("cnm"), f"document {doc_id}"))
    except (TypeError, ValueError) as exc:
        raise ChunkLensError(f"document {doc_id}: not a document record") from exc
    if not doc.text.strip():
        raise ChunkLensError(f"document {doc_id}: no text")
    if len(doc.text) > MAX_TEXT_CHARS:  # what an uploaded document may hold
        raise ChunkLensError(f"document {doc_id}: {len(doc.text):,} characters, over the {MAX_TEXT_CHARS:,}-character "
                             "limit for one document")
    return doc


def _import_library(zf: CheckedZip, parts: dict[str, dict[str, zipfile.ZipInfo]], lib: Library,
                    datasets_root: Path, report: ImportReport) -> None:
    have = documents_by_id(lib.documents())
    order = _json(zf, parts["order"]["order.json"]) if "order.json" in parts["order"] else list(parts["text"])
    for doc_id in order if isinstance(order, list) else []:
        if not isinstance(doc_id, str) or doc_id not in parts["text"] or not valid_doc_id(doc_id):
            continue
        try:
            doc = _document(_json(zf, parts["text"][doc_id]), doc_id)
        except ChunkLensError as exc:
            report.skipped.append(f"{exc} (left out)")
            continue
        if doc_id in have:
            same = have[doc_id].text == doc.text
            report.skipped.append(f"document {doc_id}: already here" + ("" if same else
                                  " with other text; this library's own was kept"))
            continue
        originals = [n for n in parts["original"] if Path(n).stem == doc_id and Path(n).suffix in SUPPORTED_SUFFIXES]
        original = (originals[0], zf.read(parts["original"][originals[0]])) if originals else None
        try:
            stored = lib.import_document(doc, original)
        except DocumentError as exc:  # past the library's text cap
            report.skipped.append(f"document {doc_id}: {exc} (left out)")
            continue
        if stored:
            have[doc_id] = doc
            report.added.append(f"document {doc_id}")
    if "dataset.json" in parts["dataset"]:
        _import_questions(zf, parts, lib, datasets_root, report)
    if "judged.jsonl" in parts["judged"]:
        _import_judged(zf, parts["judged"]["judged.jsonl"], lib, report)
    log = EditLog(lib.edits_dir)
    for key, info in parts["edits"].items():
        if log.path(key).exists():
            report.skipped.append(f"CNM edits for run {key[:8]}: this library has its own; kept them")
            continue
        try:
            data = _json(zf, info)
            batches = [[stored_edit(e) for e in batch] for batch in data["batches"]]  # every field checked
            for batch in batches:
                for e in batch:
                    if e.cnm is not None:
                        e.cnm = CNM.model_validate(e.cnm).model_dump()
        except (ChunkLensError, KeyError, TypeError, ValueError) as exc:
            report.skipped.append(f"CNM edits for run {key[:8]}: not readable ({str(exc)[:80]})")
            continue
        for batch in batches:
            log.append(key, str(data.get("spec", ""))[:200], batch)
        report.added.append(f"CNM edits for run {key[:8]}")


def _import_questions(zf: CheckedZip, parts: dict[str, dict[str, zipfile.ZipInfo]], lib: Library,
                      datasets_root: Path, report: ImportReport) -> None:
    """The library's QA set: the bundled sample set by reference, another set from its questions.jsonl (checked
    against the imported documents). A library that has a set already keeps it."""
    marker = _json(zf, parts["dataset"]["dataset.json"])
    if lib.dataset_folder() is not None:
        report.skipped.append("QA set: this library has its own; kept it")
    elif marker == {"sample": "qa"}:
        lib.set_dataset_folder(sample_folder())
        report.added.append("the sample set's questions")
    elif isinstance(marker, dict) and isinstance(marker.get("name"), str) and "questions.jsonl" in parts["questions"]:
        name = marker["name"][:80]
        try:
            ds = lib.attach_questions(datasets_root, name, zf.read(parts["questions"]["questions.jsonl"]))
        except DatasetError as exc:
            report.skipped.append(f"QA set {name}: not usable ({str(exc)[:120]})")
            return
        report.added.append(f"QA set {name}: {len(ds.questions)} questions")


def _import_judged(zf: CheckedZip, info: zipfile.ZipInfo, lib: Library, report: ImportReport) -> None:
    """The questions judged in the app, merged into the library's own (same wording: the archive's judgments)."""
    try:
        text = zf.read(info).decode("utf-8")
        questions = [parse_line(loads_checked(line, f"judged.jsonl:{n}"), f"judged.jsonl:{n}")
                     for n, line in jsonl_lines(text)]
    except (ChunkLensError, UnicodeDecodeError, ValueError) as exc:
        report.skipped.append(f"judged questions: not readable ({str(exc)[:120]})")
        return
    added, replaced = lib.judged.merge(questions)
    report.added.append(f"judged questions: {added} added" + (f", {replaced} re-judged" if replaced else ""))


def _skip_runs(runs: dict[str, zipfile.ZipInfo], report: ImportReport) -> None:
    """Chunk runs stay out of the shared run cache: it is keyed by documents and chunker, not by library, so another
    library with the same documents would be served the archive's chunks, prefixes and tags."""
    for key in runs:
        report.skipped.append(f"chunk run {key[:8]}: left out (runs are recomputed here, so an import changes only "
                              "this library)")


def _read_settings(zf: CheckedZip, info: zipfile.ZipInfo, ws: Workspace, report: ImportReport) -> None:
    """The archive's settings, checked, into `report.settings`; nothing is written."""
    try:
        data = _json(zf, info)
        settings = Settings.model_validate({**data, "workspace": str(ws.root)})  # unknown fields are dropped
    except (ChunkLensError, TypeError, ValidationError):
        report.skipped.append("settings: not readable (left out)")
        return
    report.settings = settings
    report.skipped.append("settings: not applied (an import never changes the saved settings)")


def _over_limit(name: str, size: int, max_file_bytes: int, report: ImportReport) -> bool:
    """A member bigger than one upload may be (`size`: as inflated, not as stated) is left out, as the file itself
    would have been refused."""
    if size <= max_file_bytes:
        return False
    report.skipped.append(f"{name[:80]}: {megabytes(size)}, over the {megabytes(max_file_bytes)} "
                          "limit per file (left out)")
    return True


def import_archive(data: bytes, ws: Workspace, into: str | None = None, limits: ZipLimits | None = None,
                   max_file_bytes: int = MAX_FILE_BYTES, max_archive_bytes: int = MAX_ARCHIVE_BYTES,
                   max_library_text_bytes: int = MAX_LIBRARY_TEXT_BYTES) -> ImportReport:
    """Merge a ChunkLens archive into the workspace. `into` names the library every archived library's content
    goes to (the app passes the session's own); None keeps the archive's library ids. `max_file_bytes` is the
    per-file upload limit (a setting), applied to every member; a document that would take its library past
    `max_library_text_bytes` of text (the operator's setting) is left out with a line. The archive's settings come
    back in `report.settings`, never saved. Raises ArchiveError, before anything is written, for an archive refused
    as a whole (over `max_archive_bytes`, unsafe names, sizes, damage, an unknown version)."""
    if len(data) > max_archive_bytes:
        raise ArchiveError(f"the archive is {megabytes(len(data))}, over the {megabytes(max_archive_bytes)} limit "
                           "for ChunkLens archives")
    with open_checked(io.BytesIO(data), limits or ZipLimits()) as zf:
        members = zf.members
        _manifest(zf, members)
        zf.verify()  # every member inflated once, counted and checked, before anything is written
        report = ImportReport()
        runs: dict[str, zipfile.ZipInfo] = {}
        libs: dict[str, dict[str, dict[str, zipfile.ZipInfo]]] = {}
        settings_info = None
        for name, info in members.items():
            m = _MEMBER.match(name)
            if name == "manifest.json":
                continue
            if m is None:
                report.skipped.append(f"{name[:80]}: not part of a ChunkLens archive (left out)")
            elif _over_limit(name, max(info.file_size, zf.inflated_size(name)), max_file_bytes, report):
                continue
            elif m["settings"]:
                settings_info = info
            elif m["run"]:
                runs[m["run"]] = info
            else:
                kind = next(k for k in _LIBRARY_PARTS if m[k])
                group = libs.setdefault(m["lib"], {k: {} for k in _LIBRARY_PARTS})
                group[kind][m[kind]] = info
        try:
            for lib_id, parts in libs.items():
                lib = Library(ws.uploads, into or lib_id, max_text_bytes=max_library_text_bytes)
                _import_library(zf, parts, lib, ws.datasets, report)
            _skip_runs(runs, report)
            if settings_info is not None:
                _read_settings(zf, settings_info, ws, report)
        except ArchiveError:
            raise
        except (ChunkLensError, OSError) as exc:
            report.skipped.append(f"import stopped: {str(exc)[:120]}")
    return report
