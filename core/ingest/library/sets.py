"""A library's QA sets and judged questions: loading a qa-spans folder or an upload into the library, the set
its questions come from, and the questions judged in the app."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.infra.errors import DatasetError, DocumentError, SetExists
from core.infra.storage import sync_folder, write_atomically
from core.ingest.datasets import QADataset, load_dataset
from core.ingest.judged import JudgedSet, read_zip
from core.ingest.library.files import read_json, text_bytes, undo_steps, why_failed
from core.ingest.library.shelf import DocumentShelf
from core.schema.documents import Document, documents_by_id
from core.schema.questions import Question

JUDGED_SET_NAME = "judged in the app"  # the name a library's own set goes by where no QA set names it


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


def _doc_ids(q) -> set[str]:
    """The documents a judged question's spans lie in."""
    return {s.doc_id for s in [*q.relevant, *q.not_relevant]}


class QASets(DocumentShelf):
    """A library's QA sets and judged questions, on top of its documents."""

    def check(self) -> list[str]:
        """Read every stored text and the QA set now, so that damaged files are kept aside and reported at once
        rather than when some page first reads them; returns `problems`."""
        if self.dataset() is None:  # a QA set that loads has read the documents already
            self.documents()
        return self.problems

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
        text = sum(text_bytes(d) for d in held.values())
        added: list[str] = []
        present: list[str] = []
        conflicts: list[str] = []
        undo: list[Callable[[], object]] = []
        storing: str | None = None
        try:
            for doc in ds.documents:
                if doc.doc_id in held:
                    (present if held[doc.doc_id].text == doc.text else conflicts).append(doc.doc_id)
                    continue
                if reason := self.text_reason(doc, text):
                    raise DatasetError(f"QA set '{folder.name}': document '{doc.doc_id[:80]}': {reason}; nothing of "
                                       "the set was kept, the library is as it was")
                text += text_bytes(doc)
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
            undo_steps(undo)
            what = "it" if storing is None else f"document '{storing[:80]}'"
            raise DatasetError(f"QA set '{folder.name}': {what} could not be stored ({why_failed(exc)}); nothing of "
                               "the set was kept, the library is as it was") from exc
        except BaseException:
            undo_steps(undo)
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
            undo.append(functools.partial((scratch / kept.name).rename, kept))
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
        used = {d for q in imported.questions for d in _doc_ids(q)}
        added_docs: list[str] = []
        refused: dict[str, str] = {}  # documents past the library's text cap, with the reason
        for d in imported.documents:
            if d.doc_id in used and d.doc_id not in held:
                try:
                    if self.import_document(d):
                        added_docs.append(d.doc_id)
                except DocumentError as exc:
                    refused[d.doc_id] = str(exc)
        kept = [q for q in imported.questions if not _doc_ids(q) & (clashing | set(refused))]
        added, rejudged = self.judged.merge(kept)
        line = f"Imported {added} judged question(s)" + (f", {rejudged} judged again" if rejudged else "")
        if added_docs:
            line += f"; added {len(added_docs)} document(s): {', '.join(added_docs)}"
        on_clash = sum(1 for q in imported.questions if _doc_ids(q) & clashing)
        if on_clash:
            line += (f"; left out {on_clash} judged on {', '.join(sorted(clashing))}, which this library holds with "
                     "other text")
        on_cap = sum(1 for q in imported.questions if _doc_ids(q) & set(refused) and not _doc_ids(q) & clashing)
        if on_cap:
            line += f"; left out {on_cap} judged on {', '.join(sorted(refused))}: {next(iter(refused.values()))}"
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
            data = read_json(pointer)
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
