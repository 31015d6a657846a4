"""A document library: the files one user works on, kept in the workspace so they survive restarts.

Each browser session gets its own library id (the app keeps it in the page URL), so two sessions never see
each other's documents; reopening the URL after a restart finds the same library. The original upload and
its extracted text are both stored: extraction runs once per file.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

from core.errors import ChunkLensError, DatasetError, DocumentError
from core.ingest.datasets import QADataset, load_dataset
from core.ingest.documents import MAX_FILE_BYTES, Document, Segment, load_bytes, slugify

_ID_RE = re.compile(r"^[a-z0-9]{6,32}$")
MAX_NAME_CHARS = 120  # an uploaded file's name as kept and shown; the file system allows 255 bytes


def upload_name(name: str) -> str:
    """The name an uploaded file is known by: its last path part (after `/` or `\\`, whatever system sent it),
    without control characters (NUL, newlines) and cut to MAX_NAME_CHARS with its suffix kept. A browser sends
    only a base name, but the name is the client's to choose: this keeps it from naming a place outside the
    library and keeps error messages to one line."""
    base = re.split(r"[/\\]", name)[-1]
    base = "".join(ch for ch in unicodedata.normalize("NFC", base) if unicodedata.category(ch)[0] != "C").strip()
    if len(base) > MAX_NAME_CHARS:
        suffix = Path(base).suffix[:16]
        base = base[: MAX_NAME_CHARS - len(suffix)].rstrip() + suffix
    return base or "upload"


def _set_folder_name(name: str) -> str:
    """The folder name a saved QA set gets from the name a user gave it."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "set"


def _checked_set(datasets_root: Path, shown_as: str, corpus: bytes, questions: bytes) -> Path:
    """A scratch folder under `datasets_root` holding the set, returned only once `load_dataset` accepts it. A bad
    set raises `DatasetError` naming it `shown_as` (never the scratch path), and the scratch folder is removed."""
    scratch = datasets_root / f".upload-{secrets.token_hex(4)}"
    scratch.mkdir(parents=True)
    try:
        (scratch / "corpus.jsonl").write_bytes(corpus)
        (scratch / "questions.jsonl").write_bytes(questions)
        load_dataset(scratch)
    except DatasetError as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise DatasetError(str(exc).replace(str(scratch), shown_as)) from exc
    return scratch


def new_library_id() -> str:
    return secrets.token_hex(6)


def valid_library_id(lib_id: str | None) -> bool:
    return bool(lib_id and _ID_RE.match(lib_id))


def valid_doc_id(doc_id: str) -> bool:
    """A doc id as `slugify` makes them: safe as a file name in the library."""
    return bool(doc_id) and slugify(doc_id) == doc_id


@dataclass
class AddResult:
    added: list[Document]
    errors: list[str]

    @property
    def notes(self) -> list[str]:
        """Things to tell the user about files that did load (e.g. a guessed text encoding)."""
        return [note for doc in self.added for note in doc.notes]


@dataclass
class SetLoad:
    """What loading a QA set into a library did: the library as a QA set, and which of the set's documents were
    added, were there already (same id and text), or were left out because the library uses their id already."""

    dataset: QADataset
    added: list[str]
    present: list[str]
    conflicts: list[str]

    def message(self) -> str:
        ds = self.dataset
        others = len(ds.documents) - len(self.added) - len(self.present)
        text = (f"Loaded {len(self.added)} documents and {len(ds.questions)} questions with gold spans from "
                f"'{ds.name}'")
        if self.present:
            text += f"; {len(self.present)} were already here"
        if others > 0:
            text += f"; the library's other {others} document(s) are kept as they were"
        if self.conflicts:
            text += (f". Not loaded, because the library already holds another document under the same id: "
                     f"{', '.join(self.conflicts)} (their questions are left out)")
        return text + "."


class Library:
    def __init__(self, uploads_root: Path, lib_id: str) -> None:
        if not valid_library_id(lib_id):
            raise DocumentError(f"'{lib_id}' is not a library id")
        self.id = lib_id
        self.root = uploads_root / lib_id
        self.originals = self.root / "originals"
        self.texts = self.root / "texts"
        self.originals.mkdir(parents=True, exist_ok=True)
        self.texts.mkdir(parents=True, exist_ok=True)
        self._order = self.root / "order.json"
        self.edits_dir = self.root / "cnm_edits"  # hand-corrected CHOP tags (core.methods.chop.edits.EditLog)

    def _ids(self) -> list[str]:
        try:
            return list(json.loads(self._order.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return []

    def _write_ids(self, ids: list[str]) -> None:
        tmp = self._order.with_suffix(".tmp")
        tmp.write_text(json.dumps(ids), encoding="utf-8")
        tmp.replace(self._order)

    def _inside(self, folder: Path, file_name: str) -> Path:
        """`folder / file_name`, refused unless it is a plain file name that stays in `folder` (ids come from
        slugs, so this never fires for them; it is the last guard for a name built from client input)."""
        path = folder / file_name
        if file_name in ("", ".", "..") or path.parent != folder or "\x00" in file_name:
            raise DocumentError(f"{file_name[:80]!r} is not a file name this library can store")
        return path

    def _store(self, doc: Document, original: tuple[str, bytes] | None) -> None:
        if original:
            name, data = original
            self._inside(self.originals, f"{doc.doc_id}{Path(name).suffix.lower()}").write_bytes(data)
        payload = {k: v for k, v in asdict(doc).items() if k != "segments"}
        self._inside(self.texts, f"{doc.doc_id}.json").write_text(json.dumps(payload), encoding="utf-8")

    def _unique(self, doc_id: str, taken: set[str]) -> str:
        base, n, out = doc_id, 2, doc_id
        while out in taken:
            out, n = f"{base}-{n}", n + 1
        return out

    def add(self, files: list[tuple[str, bytes]], max_bytes: int = MAX_FILE_BYTES) -> AddResult:
        """Add uploaded files; each bad file is reported in one line and skipped, the good ones are kept, and
        what the library already held is never touched. `max_bytes` is the per-file limit (a setting). File
        names are the client's: they go through `upload_name` first, and only a slug of them names a file."""
        ids = self._ids()
        added, errors = [], []
        for raw_name, data in files:
            name = upload_name(raw_name)
            try:
                doc = load_bytes(name, data, max_bytes=max_bytes)
                doc.doc_id = self._unique(doc.doc_id, set(ids))
                self._store(doc, (name, data))
            except DocumentError as exc:
                errors.append(str(exc))
                continue
            except OSError as exc:  # a full disk, say: this file is reported, the batch goes on
                errors.append(f"{name}: could not be stored ({exc.strerror or exc.__class__.__name__})")
                continue
            ids.append(doc.doc_id)
            added.append(doc)
        self._write_ids(ids)
        return AddResult(added, errors)

    def import_document(self, doc: Document, original: tuple[str, bytes] | None = None) -> bool:
        """Add a document from an archive under its own id. False, and nothing written, when the library already
        holds that id: an import never replaces what a library holds."""
        ids = self._ids()
        if doc.doc_id in ids or not valid_doc_id(doc.doc_id):
            return False
        self._store(doc, original)
        self._write_ids([*ids, doc.doc_id])
        return True

    def remember_run(self, specs: list[str], joined: bool) -> None:
        """The chunkers last run over this library, so a reload or a new tab shows their results again."""
        tmp = self.root / "last_run.tmp"
        tmp.write_text(json.dumps({"specs": list(specs), "joined": bool(joined)}), encoding="utf-8")
        tmp.replace(self.root / "last_run.json")

    def last_run(self) -> tuple[list[str], bool] | None:
        try:
            data = json.loads((self.root / "last_run.json").read_text(encoding="utf-8"))
            return [str(s) for s in data["specs"]], bool(data["joined"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def dataset_folder(self) -> Path | None:
        """The qa-spans folder this library's questions come from, if any."""
        try:
            return Path(json.loads((self.root / "dataset.json").read_text(encoding="utf-8"))["path"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def set_dataset_folder(self, folder: Path) -> None:
        (self.root / "dataset.json").write_text(json.dumps({"path": str(Path(folder).resolve())}), encoding="utf-8")

    def load_dataset(self, folder: Path) -> SetLoad:
        """Add a qa-spans v1 folder's documents to the library and remember the folder for its questions.

        Nothing the library holds is removed or replaced: a set document whose id the library already uses for
        another text is not loaded (the library's own document keeps the id, and the questions about the set's
        one are left out by `dataset`)."""
        ds = load_dataset(folder)
        ids = self._ids()
        held = {d.doc_id: d for d in self.documents()}
        added, present, conflicts = [], [], []
        for doc in ds.documents:
            if doc.doc_id in held:
                (present if held[doc.doc_id].text == doc.text else conflicts).append(doc.doc_id)
                continue
            self._store(doc, None)
            ids.append(doc.doc_id)
            added.append(doc.doc_id)
        self._write_ids(ids)
        self.set_dataset_folder(folder)
        return SetLoad(self.dataset() or ds, added, present, conflicts)

    def load_uploaded_dataset(self, datasets_root: Path, name: str, corpus: bytes, questions: bytes) -> SetLoad:
        """Check an uploaded qa-spans v1 set in a scratch folder first, and only then put it in place of any set
        of the same name and load it. A bad set (spans outside their documents, broken lines) raises
        `DatasetError` and leaves both the library and the saved set it may share a name with as they were."""
        folder = datasets_root / _set_folder_name(name)
        scratch = _checked_set(datasets_root, folder.name, corpus, questions)
        old = datasets_root / f".old-{secrets.token_hex(4)}"
        if folder.exists():
            folder.rename(old)
        scratch.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
        return self.load_dataset(folder)

    def attach_questions(self, datasets_root: Path, name: str, questions: bytes) -> QADataset:
        """Give the library's own documents (as they are, originals and pages kept) the questions of a qa-spans
        v1 set: the set is written beside the other saved sets under a name of its own, checked first (every
        gold span must lie in one of these documents), and only then remembered. Raises `DatasetError`."""
        base = _set_folder_name(name)
        folder = datasets_root / base
        while folder.exists():
            folder = datasets_root / f"{base}-{secrets.token_hex(3)}"
        corpus = "".join(json.dumps({"doc_id": d.doc_id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n"
                         for d in self.documents())
        _checked_set(datasets_root, folder.name, corpus.encode("utf-8"), questions).rename(folder)
        self.set_dataset_folder(folder)
        return load_dataset(folder)

    def dataset(self) -> QADataset | None:
        """The library as a QA set: its documents, plus the questions of the set they came from whose gold
        documents are still here unchanged. None when the library did not come from a QA set."""
        try:
            path = json.loads((self.root / "dataset.json").read_text(encoding="utf-8"))["path"]
            ds = load_dataset(path)
        except (OSError, ValueError, KeyError, ChunkLensError):
            return None
        mine = {d.doc_id: d for d in self.documents()}
        same = {d.doc_id for d in ds.documents if d.doc_id in mine and mine[d.doc_id].text == d.text}
        questions = [q for q in ds.questions if all(r.doc_id in same for r in q.references)]
        return QADataset(ds.name, list(mine.values()), questions, source=ds.source)

    def documents(self) -> list[Document]:
        docs = []
        for doc_id in self._ids():
            try:
                data = json.loads((self.texts / f"{doc_id}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            data["segments"] = [Segment(**s) for s in data.get("segments", [])]
            docs.append(Document(**data))
        return docs

    def remove(self, doc_id: str) -> None:
        for f in [*self.originals.glob(f"{doc_id}.*"), self.texts / f"{doc_id}.json"]:
            f.unlink(missing_ok=True)
        self._write_ids([i for i in self._ids() if i != doc_id])

    def clear(self) -> None:
        for doc_id in self._ids():
            for f in [*self.originals.glob(f"{doc_id}.*"), self.texts / f"{doc_id}.json"]:
                f.unlink(missing_ok=True)
        self._write_ids([])
        (self.root / "dataset.json").unlink(missing_ok=True)
