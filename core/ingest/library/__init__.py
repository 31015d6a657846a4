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

import json

from core.infra.storage import write_atomically
from core.ingest.library.files import keep_aside, keep_damaged_aside, new_library_id, valid_doc_id, valid_library_id
from core.ingest.library.sets import QASets, SetLoad
from core.ingest.library.shelf import AddResult

#: the face the rest of ChunkLens imports from; the parts: files.py (ids, stored JSON and documents, damaged files
#: kept aside), shelf.py (the documents), sets.py (QA sets and judged questions)
__all__ = ["AddResult", "Library", "SetLoad", "keep_aside", "keep_damaged_aside", "new_library_id", "valid_doc_id",
           "valid_library_id"]


class Library(QASets):
    """One user's documents, and the QA set they came from, if any.

    A stored file that turns out damaged when the library reads it (a document's text, the order of the
    documents, the pointer to the QA set, the QA set's own files) is moved aside to `<name>.damaged-<UTC time>`
    (`keep_aside`) and left out, and one line naming the file, what is wrong and where it was kept is added to
    `problems`; everything else loads as before. The app shows those lines (`components.state.show_problems`)."""

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
