"""A library's documents: uploading, storing, listing and removing them, under the library's lock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from core.infra.errors import DocumentError
from core.infra.storage import locked, remove_path, stale_temporaries, write_atomically
from core.infra.uploads import megabytes
from core.ingest.documents import MAX_FILE_BYTES, load_bytes
from core.ingest.library.files import (
    file_safe,
    keep_damaged_aside,
    listing,
    read_json,
    stored_document,
    stored_text_bytes,
    text_bytes,
    undo_steps,
    upload_name,
    valid_doc_id,
    valid_library_id,
    why_failed,
)
from core.schema.documents import Document

#: the most text one library may hold, in UTF-8 bytes of its documents' extracted text: every chunker and embedder of
#: a comparison holds all of it (the default of the operator's `max_library_text_mb`, core.server_config)
MAX_LIBRARY_TEXT_BYTES = 200 * 2**20

@dataclass
class AddResult:
    added: list[Document]
    errors: list[str]

    @property
    def notes(self) -> list[str]:
        """Things to tell the user about files that did load (e.g. a guessed text encoding)."""
        return [note for doc in self.added for note in doc.notes]


class DocumentShelf:
    """A library's documents: their files (the original upload and the extracted text), their order, the ids
    never given again, and the folders and lock the rest of the library shares. A document whose stored text is
    damaged is kept aside and named in `problems` (see `Library`)."""

    def __init__(self, uploads_root: Path, lib_id: str, max_text_bytes: int = MAX_LIBRARY_TEXT_BYTES) -> None:
        if not valid_library_id(lib_id):
            raise DocumentError(f"'{lib_id}' is not a library id")
        self.id = lib_id
        #: the cap on the text of all the library's documents (`text_reason`): the operator's setting
        self.max_text_bytes = max_text_bytes
        self._held: tuple[tuple[str, ...], int] | None = None  # (listed ids, their text) as `held_text` last knew
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

    def _read_ids(self) -> list[str]:
        """The ids in order.json ([] when there is none); ValueError when it is damaged, OSError when unreadable."""
        try:
            ids = read_json(self._order)
        except FileNotFoundError:
            return []
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("not a list of document ids")
        return [i for i in ids if file_safe(i)]  # an id names files: never one that would leave the folder

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
        return sorted(p for p in listing(self.originals) if p.stem == doc_id)

    def _stored_ids(self) -> set[str]:
        """The ids some stored file is named after, listed or not (e.g. the original of a document left out as
        damaged): a new document never takes one of them."""
        return {p.stem for p in listing(self.originals)} | {p.stem for p in self.texts.glob("*.json")}

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
            undo_steps([p.unlink for p in written])
            raise

    def held_text(self, ids: list[str] | None = None) -> int:
        """The text the library holds (of documents `ids`, all listed ones by default), as `text_bytes` counts it,
        read from the stored files (each once per process; the sum is kept while the listed ids stay the same, so
        an archive of many documents does not stat them all for each one)."""
        key = tuple(self._ids() if ids is None else ids)
        if self._held is None or self._held[0] != key:
            self._held = (key, sum(stored_text_bytes(self.texts / f"{i}.json") for i in key))
        return self._held[1]

    def _holds(self, ids: list[str], held: int) -> None:
        """Remember that the listed `ids` hold `held` bytes of text (after a write this object made)."""
        self._held = (tuple(ids), held)

    def text_reason(self, doc: Document, held: int) -> str | None:
        """Why `doc` cannot join a library that holds `held` bytes of text (one line, for after the document's
        name), or None when it fits under `max_text_bytes`."""
        size = text_bytes(doc)
        if held + size <= self.max_text_bytes:
            return None
        return (f"its {megabytes(size)} of text would take this library past its limit of "
                f"{megabytes(self.max_text_bytes)} of text (it holds {megabytes(held)}; setting max_library_text_mb)")

    def _unique(self, doc_id: str, taken: set[str]) -> str:
        base, n, out = doc_id, 2, doc_id
        while out in taken:
            out, n = f"{base}-{n}", n + 1
        return out

    def add(self, files: list[tuple[str, bytes]], max_bytes: int = MAX_FILE_BYTES) -> AddResult:
        """Add uploaded files; each bad file is reported in one line and skipped, the good ones are kept, and
        what the library already held is never touched. `max_bytes` is the per-file limit (a setting); a file whose
        text would take the library past `max_text_bytes` is refused. File names are the client's: they go through
        `upload_name` first, and only a slug of them names a file.

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
        held = self.held_text(ids)
        added: list[tuple[int, str, Document]] = []
        for n, name, data, doc in loaded:
            if reason := self.text_reason(doc, held):
                errors[n] = f"{name}: {reason}"
                continue
            doc.doc_id = self._unique(doc.doc_id, taken)
            try:
                self._store(doc, (name, data))
            except DocumentError as exc:
                errors[n] = str(exc)
                continue
            except OSError as exc:  # a full disk, say: this file is reported, the batch goes on
                errors[n] = f"{name}: could not be stored ({why_failed(exc)})"
                continue
            taken.add(doc.doc_id)
            held += text_bytes(doc)
            added.append((n, name, doc))
        try:
            self._write_ids(ids + [doc.doc_id for _, _, doc in added])
        except OSError as exc:  # not listed, so not kept: the files go, and each upload says why
            for n, name, doc in added:
                undo_steps([f.unlink for f in self._files_of(doc.doc_id)])
                errors[n] = f"{name}: could not be stored ({why_failed(exc)})"
            return []
        self._holds(ids + [doc.doc_id for _, _, doc in added], held)
        return [doc for _, _, doc in added]

    def _files_of(self, doc_id: str) -> list[Path]:
        return [*self.originals_of(doc_id), self.texts / f"{doc_id}.json"]

    def import_document(self, doc: Document, original: tuple[str, bytes] | None = None) -> bool:
        """Add a document from an archive under its own id. False, and nothing written, when the library already
        holds that id (or a stored file bears it): an import never replaces what a library holds. A document whose
        text would take the library past `max_text_bytes` raises DocumentError with the reason (`text_reason`)."""
        if not valid_doc_id(doc.doc_id):
            return False
        with self._locked():
            ids = self._ids()
            if doc.doc_id in ids or doc.doc_id in self._stored_ids():
                return False
            held = self.held_text(ids)
            if reason := self.text_reason(doc, held):
                raise DocumentError(reason)
            self._store(doc, original)
            self._write_ids([*ids, doc.doc_id])
            self._holds([*ids, doc.doc_id], held + text_bytes(doc))
        return True

    def documents(self) -> list[Document]:
        """The library's documents in the order they were added. One whose stored text is damaged is kept aside
        and left out (see `problems`); the others load."""
        docs, damaged = [], []
        for doc_id in self._ids():
            path = self.texts / f"{doc_id}.json"
            try:
                docs.append(stored_document(path))
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
            ids = read_json(self._retired_file)
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
