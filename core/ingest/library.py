"""A document library: the files one user works on, kept in the workspace so they survive restarts.

Each browser session gets its own library id (the app keeps it in the page URL), so two sessions never see
each other's documents; reopening the URL after a restart finds the same library. The original upload and
its extracted text are both stored: extraction runs once per file.

Several sessions (or processes) may still work on one library at once, e.g. two tabs on the same URL: every
read-change-write of the library's files runs under the library's lock (`core.infra.storage.locked` on
`<library>/.lock`), and every file is written atomically (durably for what the user would lose), so no upload,
removal or QA set of one session is lost to another's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shutil
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

from core.infra.errors import DatasetError, DocumentError, SetExists
from core.infra.storage import locked, remove_path, stale_temporaries, sync_folder, write_atomically
from core.ingest.datasets import QADataset, load_dataset
from core.ingest.documents import MAX_FILE_BYTES, load_bytes, slugify
from core.ingest.judged import JudgedSet, read_zip
from core.schema.documents import Document, Segment, documents_by_id
from core.schema.questions import Question

_ID_RE = re.compile(r"[a-z0-9]{6,32}")  # whole ids only (fullmatch): `$` would let "abcdef\n" through
JUDGED_SET_NAME = "judged in the app"  # the name a library's own set goes by where no QA set names it
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


def _checked_set(datasets_root: Path, shown_as: str, corpus: bytes, questions: bytes) -> tuple[Path, QADataset]:
    """A scratch folder under `datasets_root` holding the set (written durably) and the set it holds, returned
    only once `load_dataset` accepts it. A bad set raises `DatasetError` naming it `shown_as` (never the scratch
    path); on any exception the scratch folder is removed."""
    scratch = datasets_root / f".upload-{secrets.token_hex(4)}"
    scratch.mkdir(parents=True)
    try:
        write_atomically(scratch / "corpus.jsonl", corpus, durable=True)
        write_atomically(scratch / "questions.jsonl", questions, durable=True)
        return scratch, load_dataset(scratch)
    except DatasetError as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise DatasetError(str(exc).replace(str(scratch), shown_as)) from exc
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _kept_in(ds: QADataset, folder: Path) -> QADataset:
    """The set checked in a scratch folder, named and sourced as it is once kept in `folder`."""
    corpus = str(folder / "corpus.jsonl")
    return dataclasses.replace(ds, name=folder.name, source=str(folder),
                               documents=[dataclasses.replace(d, source=corpus) for d in ds.documents])


def _why(exc: BaseException) -> str:
    """A failed write's reason in a few words."""
    if isinstance(exc, OSError):
        return exc.strerror or exc.__class__.__name__
    return str(exc)[:160]


def _undo(steps: list[Callable[[], object]]) -> None:
    """Run the undo steps of a half-done change, last first; one that fails does not stop the others."""
    for step in reversed(steps):
        with suppress(OSError):
            step()


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


def keep_damaged_aside(path: Path, reason: str, consequence: str) -> tuple[bool, str | None]:
    """`keep_aside` for a file found damaged, with the one line that tells the user: why it is damaged (`reason`),
    what that means (`consequence`) and where it went. False when it could not be moved (the line says so); no line
    when another session kept it aside a moment ago."""
    try:
        kept = keep_aside(path)
    except FileNotFoundError:
        return True, None
    except OSError as exc:
        return False, (f"{path}: damaged ({reason}); {consequence}. It could not be kept aside "
                       f"({exc.strerror or exc.__class__.__name__}), so it is left where it is.")
    return True, f"{path}: damaged ({reason}); {consequence}. The file is kept as {kept.name} in the same folder."


def _json_reason(exc: ValueError | RecursionError) -> str:
    """Why stored JSON does not load, in a few words."""
    if isinstance(exc, RecursionError):
        return "not valid JSON: nested too deeply"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


def _read_json(path: Path):
    """The JSON in `path`; a damaged file raises ValueError with a short reason, a missing one FileNotFoundError."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(_json_reason(exc)) from None


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
    return bool(lib_id) and isinstance(lib_id, str) and _ID_RE.fullmatch(lib_id) is not None


def _file_safe(doc_id: str) -> bool:
    """An id `Library._store` could have written: one plain file name (what `_inside` lets through)."""
    return doc_id not in ("", ".", "..") and "/" not in doc_id and "\x00" not in doc_id


def _listing(folder: Path) -> list[Path]:
    """The folder's entries; none when it was never made (a library nothing was written to yet)."""
    try:
        return list(folder.iterdir())
    except FileNotFoundError:
        return []


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
        self.texts = self.root / "texts"  # both folders are made by the first write (`_locked`), not by a visit
        self._order = self.root / "order.json"
        self._retired_file = self.root / "retired.json"  # ids of removed documents, never given to an upload again
        self.edits_dir = self.root / "cnm_edits"  # hand-corrected CHOP tags (core.methods.chop.edits.EditLog)
        #: the QA sets uploaded into this library, one folder each (created on first use); sets uploaded before
        #: sets belonged to a library stay in the workspace's `datasets` folder and load from there as before
        self.sets_dir = self.root / "datasets"
        self._swept = False  # whether `_sweep` ran (once per object, at its first write)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The library's lock: one session at a time reads, changes and writes its files. Every write holds it,
        so this is where the library's folders are made: a visit that only reads (every new browser session gets
        an id) leaves nothing on disk. The first time this object holds it, it clears what a killed process left
        (`_sweep`)."""
        self.originals.mkdir(parents=True, exist_ok=True)
        self.texts.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            if not self._swept:
                self._swept = True
                self._sweep()
            yield

    def _sweep(self) -> None:
        """Remove what a process killed mid-write (`kill -9`) left, under the lock, so no write is under way:
        temporary files of dead processes, and a document stored but never listed (killed between storing its
        text and writing the order), text and original. A lone original without a text is kept: that is a
        damaged document's upload, kept on purpose. Nothing is swept while order.json cannot be read."""
        for folder in (self.root, self.originals, self.texts):
            for path in stale_temporaries(folder):
                remove_path(path)
        try:
            listed = set(self._read_ids())
        except (OSError, ValueError):
            return
        for text in list(self.texts.glob("*.json")):
            if text.stem not in listed:
                for path in [*self.originals_of(text.stem), text]:
                    path.unlink(missing_ok=True)

    def _note(self, line: str) -> None:
        if line not in self.problems:
            self.problems.append(line)

    def _kept_aside(self, path: Path, reason: str, consequence: str) -> bool:
        """Keep the damaged `path` aside and note it; False (and noted so) when it could not be moved."""
        moved, line = keep_damaged_aside(path, reason, consequence)
        if line:
            self._note(line)
        return moved

    def check(self) -> list[str]:
        """Read every stored text and the QA set now, so that damaged files are kept aside and reported at once
        rather than when some page first reads them; returns `problems`."""
        if self.dataset() is None:  # a QA set that loads has read the documents already
            self.documents()
        return self.problems

    def _read_ids(self) -> list[str]:
        """The ids in order.json ([] when there is none); ValueError when it is damaged, OSError when unreadable."""
        try:
            ids = _read_json(self._order)
        except FileNotFoundError:
            return []
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("not a list of document ids")
        return [i for i in ids if _file_safe(i)]  # an id names files: never one that would leave the folder

    def _ids(self) -> list[str]:
        try:
            return self._read_ids()
        except OSError as exc:
            self._note(f"{self._order}: could not be read ({exc.strerror or exc.__class__.__name__}); the library "
                       "shows no documents for now.")
            return []
        except ValueError as exc:
            return self._rebuild_ids(str(exc))

    def _rebuild_ids(self, reason: str) -> list[str]:
        """The document order from the stored texts (oldest first) when order.json is damaged, kept aside."""
        with self._locked():
            with suppress(OSError, ValueError):
                return self._read_ids()  # another session rebuilt it while this one waited for the lock
            stored = sorted(self.texts.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
            ids = [p.stem for p in stored]
            stored_docs = f"{len(ids)} stored document" + ("" if len(ids) == 1 else "s")
            if self._kept_aside(self._order, reason, f"the order of the {stored_docs} was rebuilt from their files"):
                self._write_ids(ids)
            return ids

    def _write_ids(self, ids: list[str]) -> None:
        write_atomically(self._order, json.dumps(ids), durable=True)

    def _inside(self, folder: Path, file_name: str) -> Path:
        """`folder / file_name`, refused unless it is a plain file name that stays in `folder` (ids come from
        slugs, so this never fires for them; it is the last guard for a name built from client input)."""
        path = folder / file_name
        if file_name in ("", ".", "..") or path.parent != folder or "\x00" in file_name:
            raise DocumentError(f"{file_name[:80]!r} is not a file name this library can store")
        return path

    def originals_of(self, doc_id: str) -> list[Path]:
        """The original upload of document `doc_id` (none for a QA set's documents), found by its exact name
        `<doc_id><suffix>`: an id is never a pattern, so `manual` is not `manual.v2` and `f*` is not `fan`."""
        return sorted(p for p in _listing(self.originals) if p.stem == doc_id)

    def _stored_ids(self) -> set[str]:
        """The ids some stored file is named after, listed or not (e.g. the original of a document left out as
        damaged): a new document never takes one of them."""
        return {p.stem for p in _listing(self.originals)} | {p.stem for p in self.texts.glob("*.json")}

    def _store(self, doc: Document, original: tuple[str, bytes] | None) -> None:
        """Write the document's original (if any) and its text, each atomically and durably; on a failure neither
        is left behind."""
        written: list[Path] = []
        try:
            if original:
                name, data = original
                written.append(self._inside(self.originals, f"{doc.doc_id}{Path(name).suffix.lower()}"))
                write_atomically(written[-1], data, durable=True)
            payload = {k: v for k, v in asdict(doc).items() if k != "segments"}
            written.append(self._inside(self.texts, f"{doc.doc_id}.json"))
            write_atomically(written[-1], json.dumps(payload), durable=True)
        except BaseException:
            _undo([p.unlink for p in written])
            raise

    def _unique(self, doc_id: str, taken: set[str]) -> str:
        base, n, out = doc_id, 2, doc_id
        while out in taken:
            out, n = f"{base}-{n}", n + 1
        return out

    def add(self, files: list[tuple[str, bytes]], max_bytes: int = MAX_FILE_BYTES) -> AddResult:
        """Add uploaded files; each bad file is reported in one line and skipped, the good ones are kept, and
        what the library already held is never touched. `max_bytes` is the per-file limit (a setting). File
        names are the client's: they go through `upload_name` first, and only a slug of them names a file.

        The files are read first; then, under the library's lock, each gets an id no stored file uses, is
        written and listed, so uploads from several sessions at once are all kept, none under another's id."""
        errors: dict[int, str] = {}
        loaded: list[tuple[int, str, bytes, Document]] = []
        for n, (raw_name, data) in enumerate(files):
            name = upload_name(raw_name)
            try:
                loaded.append((n, name, data, load_bytes(name, data, max_bytes=max_bytes)))
            except DocumentError as exc:
                errors[n] = str(exc)
        added: list[Document] = []
        if loaded:
            with self._locked():
                added = self._add_loaded(loaded, errors)
        return AddResult(added, [errors[n] for n in sorted(errors)])

    def _add_loaded(self, loaded: list[tuple[int, str, bytes, Document]], errors: dict[int, str]) -> list[Document]:
        """Store and list read uploads (under the lock); a file that cannot be stored gets its line in `errors`."""
        ids = self._ids()
        taken = set(ids) | self._stored_ids() | self._retired()
        added: list[tuple[int, str, Document]] = []
        for n, name, data, doc in loaded:
            doc.doc_id = self._unique(doc.doc_id, taken)
            try:
                self._store(doc, (name, data))
            except DocumentError as exc:
                errors[n] = str(exc)
                continue
            except OSError as exc:  # a full disk, say: this file is reported, the batch goes on
                errors[n] = f"{name}: could not be stored ({_why(exc)})"
                continue
            taken.add(doc.doc_id)
            added.append((n, name, doc))
        try:
            self._write_ids(ids + [doc.doc_id for _, _, doc in added])
        except OSError as exc:  # not listed, so not kept: the files go, and each upload says why
            for n, name, doc in added:
                _undo([f.unlink for f in self._files_of(doc.doc_id)])
                errors[n] = f"{name}: could not be stored ({_why(exc)})"
            return []
        return [doc for _, _, doc in added]

    def _files_of(self, doc_id: str) -> list[Path]:
        return [*self.originals_of(doc_id), self.texts / f"{doc_id}.json"]

    def import_document(self, doc: Document, original: tuple[str, bytes] | None = None) -> bool:
        """Add a document from an archive under its own id. False, and nothing written, when the library already
        holds that id (or a stored file bears it): an import never replaces what a library holds."""
        if not valid_doc_id(doc.doc_id):
            return False
        with self._locked():
            ids = self._ids()
            if doc.doc_id in ids or doc.doc_id in self._stored_ids():
                return False
            self._store(doc, original)
            self._write_ids([*ids, doc.doc_id])
        return True

    def remember_run(self, specs: list[str], joined: bool) -> None:
        """The chunkers last run over this library, so a reload or a new tab shows their results again."""
        with self._locked():
            write_atomically(self.root / "last_run.json", json.dumps({"specs": list(specs), "joined": bool(joined)}))

    def last_run(self) -> tuple[list[str], bool] | None:
        try:
            data = json.loads((self.root / "last_run.json").read_text(encoding="utf-8"))
            return [str(s) for s in data["specs"]], bool(data["joined"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def dataset_folder(self) -> Path | None:
        """The qa-spans folder this library's questions come from, if any."""
        try:
            return Path(json.loads((self.root / "dataset.json").read_text(encoding="utf-8"))["path"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def set_dataset_folder(self, folder: Path) -> None:
        with self._locked():
            write_atomically(self.root / "dataset.json", json.dumps({"path": str(Path(folder).resolve())}),
                             durable=True)

    def load_dataset(self, folder: Path) -> SetLoad:
        """Add a qa-spans v1 folder's documents to the library and remember the folder for its questions.

        Nothing the library holds is removed or replaced: a set document whose id the library already uses for
        another text is not loaded (the library's own document keeps the id, and the questions about the set's
        one are left out by `dataset`). A document that cannot be stored raises `DatasetError`, and then nothing
        of the set is kept."""
        ds = load_dataset(folder)
        with self._locked():
            added, present, conflicts = self._take_set(ds, folder)
        return SetLoad(self.dataset() or ds, added, present, conflicts)

    def load_uploaded_dataset(self, name: str, corpus: bytes, questions: bytes, replace: bool = False) -> SetLoad:
        """Keep an uploaded qa-spans v1 set in this library (`sets_dir/<name>`) and load it.

        The set is checked in a scratch folder first. A set of the same name in this library is replaced only with
        `replace=True`; otherwise `SetExists` is raised (ask the user, then call again). Sets of other libraries
        are never touched. Replacing is all or nothing: a bad set (spans outside their documents, broken lines)
        raises `DatasetError`, and so does one whose documents cannot be stored; either way the library, the set
        it replaces and the folder hold what they held, with no scratch folder or stray text left behind."""
        folder = self.sets_dir / _set_folder_name(name)
        if not replace:
            self._refuse_existing(folder)
        scratch, ds = _checked_set(self.sets_dir, folder.name, corpus, questions)
        try:
            with self._locked():
                if not replace:
                    self._refuse_existing(folder)  # another session may have saved one meanwhile
                kept = _kept_in(ds, folder)
                added, present, conflicts = self._take_set(kept, folder, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # gone already when it took the set's place
        return SetLoad(self.dataset() or kept, added, present, conflicts)

    def _refuse_existing(self, folder: Path) -> None:
        if folder.exists():
            raise SetExists(f"this library already has a QA set named '{folder.name}': replace it, or give the new "
                            "one another name")

    def _take_set(self, ds: QADataset, folder: Path,
                  scratch: Path | None = None) -> tuple[list[str], list[str], list[str]]:
        """Under the lock: store the set's new documents, put `scratch` in place as `folder` when given (the set
        it replaces moved aside), list the documents and point the library at `folder`. On any failure every step
        done is undone; a document or file that cannot be written raises `DatasetError`.
        Returns (added, present, conflicts) as `SetLoad` names them."""
        held = documents_by_id(self.documents())  # first: it may leave out a damaged document's id
        ids = self._ids()
        added, present, conflicts = [], [], []
        undo: list[Callable[[], object]] = []
        storing: str | None = None
        try:
            for doc in ds.documents:
                if doc.doc_id in held:
                    (present if held[doc.doc_id].text == doc.text else conflicts).append(doc.doc_id)
                    continue
                storing = doc.doc_id
                self._store(doc, None)
                undo.append((self.texts / f"{doc.doc_id}.json").unlink)
                added.append(doc.doc_id)
            storing = None
            if scratch is not None:
                self._swap_folder(scratch, folder, undo)
            self._write_ids(ids + added)
            undo.append(lambda: self._write_ids(ids))
            self.set_dataset_folder(folder)
        except (DocumentError, OSError) as exc:
            _undo(undo)
            what = "it" if storing is None else f"document '{storing[:80]}'"
            raise DatasetError(f"QA set '{folder.name}': {what} could not be stored ({_why(exc)}); nothing of the set "
                               "was kept, the library is as it was") from exc
        except BaseException:
            _undo(undo)
            raise
        if scratch is not None:
            self._discard_replaced(folder)
        return added, present, conflicts

    def _swap_folder(self, scratch: Path, folder: Path, undo: list[Callable[[], object]]) -> None:
        """Put `scratch` in place as `folder`; a set already there is renamed to `.replaced-<name>` until
        `_discard_replaced` (its kept-aside damaged copies move to the new set first). Undo steps put things
        back."""
        replaced = folder.with_name(f".replaced-{folder.name}")
        if replaced.exists() and not folder.exists():  # a crash came between the two renames: it is the set
            replaced.rename(folder)
        shutil.rmtree(replaced, ignore_errors=True)  # a crash came after the swap: the set in place is the new one
        for kept in sorted(folder.glob("*.damaged-*")):  # copies kept aside for the user move to the new set
            kept.rename(scratch / kept.name)
            undo.append(lambda kept=kept: (scratch / kept.name).rename(kept))
        if folder.exists():
            folder.rename(replaced)
            undo.append(lambda: replaced.rename(folder))
        scratch.rename(folder)
        undo.append(lambda: folder.rename(scratch))
        sync_folder(folder.parent)

    def _discard_replaced(self, folder: Path) -> None:
        shutil.rmtree(folder.with_name(f".replaced-{folder.name}"), ignore_errors=True)

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
        scratch, _ = _checked_set(datasets_root, folder.name, corpus.encode("utf-8"), questions)
        scratch.rename(folder)
        self.set_dataset_folder(folder)
        return load_dataset(folder)

    @property
    def judged(self) -> JudgedSet:
        """The questions judged by hand in this library (core.ingest.judged), kept under the library's lock."""
        return JudgedSet(self.root / "judged.jsonl", self._locked)

    def judged_questions(self, documents: Sequence[Document] | None = None) -> list[Question]:
        """The judged questions that can score chunkers: with evidence, on documents still here unchanged
        (`documents`: the library's, when the caller has read them already). A damaged file is kept aside (a line
        in `problems`) and the library goes on without it."""
        try:
            judged = self.judged.questions()
        except DatasetError as exc:
            path = self.judged.path
            self._kept_aside(path, str(exc).removeprefix(f"{path}:").strip(),
                             "this library's judged questions are left out (the damaged copy is kept)")
            return []
        except OSError as exc:
            self._note(f"{self.judged.path}: could not be read ({exc.strerror or exc.__class__.__name__}); the "
                       "judged questions are left out for now.")
            return []
        if not judged:
            return []
        docs = documents_by_id(self.documents() if documents is None else documents)
        return [q.as_question() for q in judged if q.usable and q.fits(docs)]

    def import_judged(self, data: bytes, max_bytes: int) -> str:
        """Bring in a judged set exported as a zip (`core.ingest.judged.export_zip`, or any qa-spans v1 folder
        zipped): its documents the library lacks are added, a question judged on a document the library holds
        with other text is left out, the rest merge into the library's own set. Returns the line to show; a bad
        file raises DatasetError."""
        imported = read_zip(data, max_bytes)
        held = documents_by_id(self.documents())
        clashing = {d.doc_id for d in imported.documents if d.doc_id in held and held[d.doc_id].text != d.text}
        used = {s.doc_id for q in imported.questions for s in [*q.relevant, *q.not_relevant]}
        added_docs = [d.doc_id for d in imported.documents
                      if d.doc_id in used and d.doc_id not in held and self.import_document(d)]
        kept = [q for q in imported.questions
                if not {s.doc_id for s in [*q.relevant, *q.not_relevant]} & clashing]
        added, rejudged = self.judged.merge(kept)
        line = f"Imported {added} judged question(s)" + (f", {rejudged} judged again" if rejudged else "")
        if added_docs:
            line += f"; added {len(added_docs)} document(s): {', '.join(added_docs)}"
        if len(kept) < len(imported.questions):
            line += (f"; left out {len(imported.questions) - len(kept)} judged on {', '.join(sorted(clashing))}, "
                     "which this library holds with other text")
        return line + "."

    def dataset(self, with_judged: bool = True) -> QADataset | None:
        """The library as a QA set: its documents, plus the questions of the set they came from whose gold
        documents are still here unchanged, plus (`with_judged`) the questions judged in the app. None when the
        library has no question: it did not come from a QA set, or that set cannot be loaded (then a line in
        `problems` says why: a damaged file of the set is kept aside, and the library forgets the set; its
        documents stay), and nothing was judged yet."""
        ds = self._set_dataset()
        if not with_judged or not self.judged.path.is_file():
            return ds
        docs = ds.documents if ds is not None else self.documents()  # each read once
        own = self.judged_questions(docs)
        if not own:
            return ds
        if ds is None:
            return QADataset(JUDGED_SET_NAME, docs, own, source=str(self.judged.path), stream_id="stream")
        return dataclasses.replace(ds, questions=[*ds.questions, *own])

    def _set_dataset(self) -> QADataset | None:
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
        mine = documents_by_id(self.documents())
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
                with self._locked():
                    if self.dataset_folder() == folder:  # not a set another session loaded meanwhile
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
                originals = [p.name for p in self.originals_of(doc_id)]
                what = f"document '{doc_id}' is left out of the library" + (
                    f" (its original upload {originals[0]} is kept: upload it again to get it back)" if originals
                    else "")
                if self._kept_aside(path, str(exc), what):
                    damaged.append(doc_id)
        if damaged:
            with self._locked():
                self._write_ids([i for i in self._ids() if i not in damaged])
        return docs

    def _retired(self) -> set[str]:
        """Ids of documents removed from this library: an upload never gets one again, so a tab that still
        lists a removed document cannot remove a newer one that took its id. A damaged file is read as none."""
        try:
            ids = _read_json(self._retired_file)
        except (OSError, ValueError):
            return set()
        return {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()

    def _retire(self, doc_ids: set[str]) -> None:
        if doc_ids:
            write_atomically(self._retired_file, json.dumps(sorted(self._retired() | doc_ids)), durable=True)

    def remove(self, doc_id: str) -> None:
        """Remove one document: its text, its original (by exact name) and its place in the order; its id is
        retired (`_retired`)."""
        with self._locked():
            ids = self._ids()
            for f in self._files_of(doc_id):
                f.unlink(missing_ok=True)
            self._retire({doc_id} & set(ids))
            self._write_ids([i for i in ids if i != doc_id])

    def clear(self) -> None:
        """Remove every listed document and forget the QA set (the saved sets themselves stay)."""
        with self._locked():
            ids = set(self._ids())
            originals = [p for p in self.originals.iterdir() if p.stem in ids]  # by exact name, as `originals_of`
            for f in [*originals, *(self.texts / f"{i}.json" for i in ids)]:
                f.unlink(missing_ok=True)
            self._retire(ids)
            self._write_ids([])
            (self.root / "dataset.json").unlink(missing_ok=True)
