"""A document library: the files one user works on, kept in the workspace so they survive restarts.

Each browser session gets its own library id (the app keeps it in the page URL), so two sessions never see
each other's documents; reopening the URL after a restart finds the same library. The original upload and
its extracted text are both stored: extraction runs once per file.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import unicodedata
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

from core.errors import DatasetError, DocumentError
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


def keep_aside(path: Path, now: datetime | None = None) -> Path:
    """Move a damaged file to a sibling `<name>.damaged-<UTC time>` (with `-2`, `-3`... when that name is taken)
    and return where it went. An earlier kept copy is never overwritten. Raises OSError when it cannot be moved
    (FileNotFoundError when the file is gone, e.g. another session kept it aside first)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    for n in count(1):
        target = path.with_name(f"{path.name}.damaged-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            os.link(path, target)  # fails if `target` exists, so no kept copy is ever replaced
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise
        except OSError:  # no hard links on this file system
            if target.exists():
                continue
            path.rename(target)
            return target
        if os.path.samefile(path, target):  # not if a good file was put in its place meanwhile
            path.unlink()
        return target
    raise AssertionError("unreachable")


def _json_reason(exc: ValueError) -> str:
    """Why stored JSON does not load, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


def _read_json(path: Path):
    """The JSON in `path`; a damaged file raises ValueError with a short reason, a missing one FileNotFoundError."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except ValueError as exc:
        raise ValueError(_json_reason(exc)) from exc


_DOC_FIELDS = {f.name for f in fields(Document)} - {"segments"}  # fields a newer version may add are ignored


def _stored_document(path: Path) -> Document:
    """A document as `Library._store` wrote it; ValueError with the reason when the file is damaged."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in ("doc_id", "title", "text") if not isinstance(data.get(k), str)]
    if missing:
        raise ValueError(f"no string field {missing[0]!r}")
    try:
        doc = Document(**{k: v for k, v in data.items() if k in _DOC_FIELDS})
        doc.segments = [Segment(**s) for s in data.get("segments") or []]
        return doc
    except TypeError as exc:
        raise ValueError(f"not a stored document ({exc})") from exc


def new_library_id() -> str:
    return secrets.token_hex(6)


def valid_library_id(lib_id: str | None) -> bool:
    return bool(lib_id and _ID_RE.match(lib_id))


def _file_safe(doc_id: str) -> bool:
    """An id `Library._store` could have written: one plain file name (what `_inside` lets through)."""
    return doc_id not in ("", ".", "..") and "/" not in doc_id and "\x00" not in doc_id


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
    """One user's documents, and the QA set they came from, if any.

    A stored file that turns out damaged when the library reads it (a document's text, the order of the
    documents, the pointer to the QA set, the QA set's own files) is moved aside to `<name>.damaged-<UTC time>`
    (`keep_aside`) and left out, and one line naming the file, what is wrong and where it was kept is added to
    `problems`; everything else loads as before. The app shows those lines (`components.state.show_problems`)."""

    def __init__(self, uploads_root: Path, lib_id: str) -> None:
        if not valid_library_id(lib_id):
            raise DocumentError(f"'{lib_id}' is not a library id")
        self.id = lib_id
        #: one line per damaged or unreadable file this object met while loading, in the order met, no repeats
        self.problems: list[str] = []
        self.root = uploads_root / lib_id
        self.originals = self.root / "originals"
        self.texts = self.root / "texts"
        self.originals.mkdir(parents=True, exist_ok=True)
        self.texts.mkdir(parents=True, exist_ok=True)
        self._order = self.root / "order.json"
        self.edits_dir = self.root / "cnm_edits"  # hand-corrected CHOP tags (core.methods.chop.edits.EditLog)

    def _note(self, line: str) -> None:
        if line not in self.problems:
            self.problems.append(line)

    def _kept_aside(self, path: Path, reason: str, consequence: str) -> bool:
        """Keep the damaged `path` aside and note it; False (and noted so) when it could not be moved."""
        try:
            kept = keep_aside(path)
        except FileNotFoundError:  # another session kept it aside a moment ago
            return True
        except OSError as exc:
            self._note(f"{path}: damaged ({reason}); {consequence}. It could not be kept aside "
                       f"({exc.strerror or exc.__class__.__name__}), so it is left where it is.")
            return False
        self._note(f"{path}: damaged ({reason}); {consequence}. The file is kept as {kept.name} in the same folder.")
        return True

    def check(self) -> list[str]:
        """Read every stored text and the QA set now, so that damaged files are kept aside and reported at once
        rather than when some page first reads them; returns `problems`."""
        if self.dataset() is None:  # a QA set that loads has read the documents already
            self.documents()
        return self.problems

    def _ids(self) -> list[str]:
        try:
            ids = _read_json(self._order)
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ValueError("not a list of document ids")
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._note(f"{self._order}: could not be read ({exc.strerror or exc.__class__.__name__}); the library "
                       "shows no documents for now.")
            return []
        except ValueError as exc:
            return self._rebuild_ids(str(exc))
        return [i for i in ids if _file_safe(i)]  # an id names files: never one that would leave the folder

    def _rebuild_ids(self, reason: str) -> list[str]:
        """The document order from the stored texts (oldest first) when order.json is damaged, kept aside."""
        stored = sorted(self.texts.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
        ids = [p.stem for p in stored]
        stored_docs = f"{len(ids)} stored document" + ("" if len(ids) == 1 else "s")
        if self._kept_aside(self._order, reason, f"the order of the {stored_docs} was rebuilt from their files"):
            self._write_ids(ids)
        return ids

    def _write_atomically(self, path: Path, text: str) -> None:
        """Readers see the old file or the new one, never half of one (which they would take for damaged)."""
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)

    def _write_ids(self, ids: list[str]) -> None:
        self._write_atomically(self._order, json.dumps(ids))

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
        # the originals of documents left out as damaged stay too: a new upload never takes their id
        originals = {p.stem for p in self.originals.iterdir()}
        added, errors = [], []
        for raw_name, data in files:
            name = upload_name(raw_name)
            try:
                doc = load_bytes(name, data, max_bytes=max_bytes)
                doc.doc_id = self._unique(doc.doc_id, set(ids) | originals)
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
        self._write_atomically(self.root / "dataset.json", json.dumps({"path": str(Path(folder).resolve())}))

    def load_dataset(self, folder: Path) -> SetLoad:
        """Add a qa-spans v1 folder's documents to the library and remember the folder for its questions.

        Nothing the library holds is removed or replaced: a set document whose id the library already uses for
        another text is not loaded (the library's own document keeps the id, and the questions about the set's
        one are left out by `dataset`)."""
        ds = load_dataset(folder)
        held = {d.doc_id: d for d in self.documents()}  # first: it may leave out a damaged document's id
        ids = self._ids()
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
        documents are still here unchanged. None when the library did not come from a QA set, and when that set
        cannot be loaded: then a line in `problems` says why (a damaged file of the set is kept aside, and the
        library forgets the set; its documents stay)."""
        pointer = self.root / "dataset.json"
        try:
            data = _read_json(pointer)
            if not isinstance(data, dict) or not isinstance(data.get("path"), str) or not data["path"]:
                raise ValueError("no QA set folder in it")
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._note(f"{pointer}: could not be read ({exc.strerror or exc.__class__.__name__}); this library's "
                       "questions are left out for now.")
            return None
        except ValueError as exc:
            self._kept_aside(pointer, str(exc), "this library forgets its QA set (its documents stay; load the set "
                                                "again for its questions)")
            return None
        folder = Path(data["path"])
        try:
            ds = load_dataset(folder)
        except DatasetError as exc:
            self._set_problem(folder, pointer, str(exc))
            return None
        except OSError as exc:
            self._note(f"{folder}: could not be read ({exc.strerror or exc.__class__.__name__}); the questions of QA "
                       f"set '{folder.name}' are left out for now, this library's documents stay.")
            return None
        mine = {d.doc_id: d for d in self.documents()}
        same = {d.doc_id for d in ds.documents if d.doc_id in mine and mine[d.doc_id].text == d.text}
        questions = [q for q in ds.questions if all(r.doc_id in same for r in q.references)]
        return QADataset(ds.name, list(mine.values()), questions, source=ds.source)

    def _set_problem(self, folder: Path, pointer: Path, message: str) -> None:
        """Note why the library's QA set did not load. When `message` (a DatasetError's, which starts with the file
        it is about) names a file of the set that is there, that file is damaged: it is kept aside and the library
        forgets the set, so the next load neither reports it again nor finds the gap it left."""
        name = folder.name
        for part in (folder / "corpus.jsonl", folder / "questions.jsonl"):
            if not message.startswith(f"{part}:") or not part.is_file():
                continue
            reason = message[len(str(part)) + 1:].strip()
            if reason[:1].isdigit():  # "3: not valid JSON (...)"
                reason = f"line {reason}"
            if self._kept_aside(part, reason, f"the questions of QA set '{name}' are left out, this library's "
                                              "documents stay; load the set again once it is repaired"):
                pointer.unlink(missing_ok=True)
            return
        parts = (folder / "corpus.jsonl", folder / "questions.jsonl")
        kept = [p.name for part in parts if message.startswith(f"{part}:")
                for p in sorted(folder.glob(f"{part.name}.damaged-*"))]
        self._note(f"{message}; the questions of QA set '{name}' are left out, this library's documents stay"
                   + (f" (a damaged copy is kept as {', '.join(kept)} in the same folder)." if kept else "."))

    def documents(self) -> list[Document]:
        """The library's documents in the order they were added. One whose stored text is damaged is kept aside
        and left out (see `problems`); the others load."""
        docs, damaged = [], []
        for doc_id in self._ids():
            path = self.texts / f"{doc_id}.json"
            try:
                docs.append(_stored_document(path))
            except FileNotFoundError:  # removed a moment ago (`remove` deletes the files before the id)
                continue
            except OSError as exc:
                self._note(f"{path}: could not be read ({exc.strerror or exc.__class__.__name__}); document "
                           f"'{doc_id}' is left out for now.")
            except ValueError as exc:
                originals = [p.name for p in sorted(self.originals.glob(f"{doc_id}.*"))]
                what = f"document '{doc_id}' is left out of the library" + (
                    f" (its original upload {originals[0]} is kept: upload it again to get it back)" if originals
                    else "")
                if self._kept_aside(path, str(exc), what):
                    damaged.append(doc_id)
        if damaged:
            self._write_ids([i for i in self._ids() if i not in damaged])
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
