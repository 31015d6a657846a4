"""Hand corrections to CHOP's output: fix a CNM tag, flip a continuity decision, export and import the tags.

CNMs stay piecewise constant, as CHOP defines them: a run starts at a document's first chunk and at every
FALSE decision, and every chunk of a run carries the run's CNM. A tag edit on any chunk therefore sets the CNM
of its whole run; flipping a decision to FALSE starts a new run (its CNM extracted with the configured backend
unless the same edit gives one); flipping to TRUE merges the chunk into the run before it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import ValidationError

from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject, loads_checked
from core.infra.storage import locked, write_atomically
from core.methods.chop.cnm import CNM, ChopMeta, CnmBackend, prefix_text
from core.methods.chop.evidence import BY_HAND, PARTS, sources_text
from core.schema.chunks import Chunk


@dataclass
class CnmEdit:
    chunk_id: str
    cnm: JsonObject | None = None  # new tag for the chunk's run, in a CNM's JSON form
    continuity: bool | None = None  # new decision between this chunk and the one before
    #: where each part of the new tag came from, when not typed by hand (a family lesson: core.methods.chop.family)
    sources: dict[str, str] | None = None


def edits_digest(edits: Sequence[CnmEdit]) -> str:
    blob = json.dumps([_plain(e) for e in edits], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _plain(edit: CnmEdit) -> JsonObject:
    """The edit as stored; an edit without sources is stored (and digested) as it was before they existed."""
    out: JsonObject = {"chunk_id": edit.chunk_id, "cnm": edit.cnm, "continuity": edit.continuity}
    if edit.sources is not None:
        out["sources"] = {part: source for part, source in edit.sources.items()}
    return out


def apply_edits(chunks: Sequence[Chunk], edits: Sequence[CnmEdit],
                backend: CnmBackend | None) -> tuple[list[Chunk], int]:
    """New chunks with the edits applied (the input is not changed) and the number of chunks whose embedded
    text changed. `backend` tags a run a flipped decision starts without a tag (None: edits that start none).
    Raises ChunkLensError for an edit that names no chunk or flips a document's first chunk."""
    out = [copy.deepcopy(c) for c in chunks]
    pos = {c.chunk_id: i for i, c in enumerate(out)}
    before = [c.embed_text for c in out]
    for e in edits:
        if e.chunk_id not in pos:
            raise ChunkLensError(f"no chunk '{e.chunk_id}' in this run")
    new_starts = set()
    for e in edits:
        if e.continuity is None:
            continue
        i = pos[e.chunk_id]
        c = out[i]
        if c.meta.get("continuity") is None:
            raise ChunkLensError(f"{e.chunk_id} starts its document: it has no decision to flip")
        if c.meta["continuity"] != e.continuity:
            c.meta.update(continuity=e.continuity, continuity_reason="set by hand")
            if not e.continuity:
                new_starts.add(i)
    tagged = {pos[e.chunk_id]: e for e in edits if e.cnm is not None}
    starts = [i for i, c in enumerate(out) if c.meta.get("continuity") is not True]
    run_of = {}
    for n, start in enumerate(starts):
        for i in range(start, starts[n + 1] if n + 1 < len(starts) else len(out)):
            run_of[i] = start
    run_cnm = {run_of[i]: CNM.model_validate(e.cnm) for i, e in tagged.items()}
    run_sources = {run_of[i]: e.sources for i, e in tagged.items()}
    missing = [start for start in starts if start in new_starts and start not in run_cnm]
    if missing and backend is None:
        raise ChunkLensError(f"{out[missing[0]].chunk_id} starts a new run without a tag, and no CNM backend "
                             "is there to extract one")
    extracted = backend.extract([out[m].text for m in missing]) if backend is not None and missing else []
    for start, result in zip(missing, extracted):
        if result.failed:
            raise ChunkLensError(f"could not extract a CNM for {out[start].chunk_id}: {result.error}")
        run_cnm[start] = result.cnm
    edited_runs = set(run_cnm)
    for start in starts:
        run_cnm.setdefault(start, CNM.of(out[start]) or CNM())
    for i, c in enumerate(out):
        start = run_of[i]
        run_cnm[start].put(c)
        c.meta["cnm_from"] = out[start].index
        if i != start:
            c.meta["cnm_source"] = "inherited"
        elif start in edited_runs:
            c.meta["cnm_source"] = "edited"
        if start in run_sources:
            c.meta["cnm_sources"] = dict(run_sources[start] or dict.fromkeys(("category", "nouns", "model"),
                                                                             BY_HAND))
        if c.meta.get("prefix_mode", "before") != "none":
            c.prefix = prefix_text(run_cnm[start])
    changed = sum(1 for c, old in zip(out, before) if c.embed_text != old)
    return out, changed


#: one row of the CNM inspector's table (`inspector_rows`), column by column
InspectorRow = TypedDict("InspectorRow", {
    "chunk": str, "start": int, "continues": bool | None, "category": str, "nouns": str, "model": str,
    "source": str | None, "tag from": str, "gold model": str, "reason": str, "text": str})


def inspector_rows(chunks: Sequence[Chunk], golds: Sequence[Mapping[str, Any] | None]) -> list[InspectorRow]:
    """One row per CHOP chunk for the CNM inspector's table: its tag (nouns joined by ", "), its decision, where
    the tag came from, the gold model and the start of its text. `edits_from_rows` reads the edited rows back."""
    rows: list[InspectorRow] = []
    for c, g in zip(chunks, golds, strict=True):
        m = ChopMeta.of(c)
        cnm = m.cnm or CNM()
        rows.append({"chunk": c.chunk_id, "start": c.start, "continues": m.continuity,
                     "category": cnm.category or "", "nouns": ", ".join(cnm.nouns), "model": cnm.model or "",
                     "source": m.source,
                     "tag from": sources_text(m.sources), "gold model": (g or {}).get("model") or "",
                     "reason": m.reason, "text": c.text[:160]})
    return rows


def edits_from_rows(chunks: Sequence[Chunk], before: Sequence[Mapping[str, Any]],
                    after: Sequence[Mapping[str, Any]]) -> list[CnmEdit]:
    """The edits a person made in the inspector's table: a changed category, nouns or model sets the chunk's tag
    (with confidence 1), a flipped "continues" its decision (the first chunk has none to flip)."""
    out = []
    for b, a, c in zip(before, after, chunks, strict=True):
        edit = CnmEdit(c.chunk_id)
        if (a["category"], a["nouns"], a["model"]) != (b["category"], b["nouns"], b["model"]):
            edit.cnm = {"category": a["category"] or None, "model": a["model"] or None,
                        "nouns": [n.strip() for n in str(a["nouns"]).split(",") if n.strip()], "confidence": 1.0}
        if c.meta.get("continuity") is not None and bool(a["continues"]) != bool(b["continues"]):
            edit.continuity = bool(a["continues"])
        if edit.cnm is not None or edit.continuity is not None:
            out.append(edit)
    return out


def export_tags(chunks: Sequence[Chunk]) -> list[JsonObject]:
    return [{"chunk_id": c.chunk_id, "doc_id": c.doc_id, "start": c.start, "end": c.end,
             "cnm": c.meta.get("cnm"), "continuity": c.meta.get("continuity")} for c in chunks]


def import_tags(chunks: Sequence[Chunk], data: object) -> list[CnmEdit]:
    """Edits that turn `chunks` into the exported tags; the export must be of the same chunks (same spans)."""
    if not isinstance(data, list):
        raise ChunkLensError("a tag file is a JSON list of chunks")
    by_id = {c.chunk_id: c for c in chunks}
    edits = []
    for row in data:
        try:
            c = by_id[row["chunk_id"]]
            if (c.start, c.end) != (row["start"], row["end"]):
                raise ChunkLensError(f"{row['chunk_id']}: spans differ; these tags are for other chunks")
            cnm = CNM.model_validate(row["cnm"] or {})
        except (KeyError, TypeError) as exc:
            raise ChunkLensError(f"tag file entry not understood: {str(row)[:80]}") from exc
        edit = CnmEdit(c.chunk_id)
        if cnm != CNM.of(c):
            edit.cnm = cnm.model_dump()
        if row.get("continuity") is not None and row["continuity"] != c.meta.get("continuity"):
            edit.continuity = bool(row["continuity"])
        if edit.cnm is not None or edit.continuity is not None:
            edits.append(edit)
    return edits


_KEY_RE = re.compile(r"^[0-9a-f]{32}$")


def stored_edit(item: object) -> CnmEdit:
    """One edit as an edit file (or an imported library's) holds it, every field checked: a chunk id, a tag that
    reads as a CNM, a true / false decision, and sources naming tag parts with text. ValueError with a short
    reason otherwise, so a damaged or hand-made file is refused when read, not when the inspector replays it."""
    if not isinstance(item, dict):
        raise ValueError(f"an edit is not an object: {str(item)[:60]}")
    unknown = sorted(set(item) - set(CnmEdit.__dataclass_fields__))
    if unknown:
        raise ValueError(f"an edit has unknown fields: {', '.join(map(str, unknown))[:60]}")
    chunk_id, cnm, continuity, sources = (item.get(k) for k in ("chunk_id", "cnm", "continuity", "sources"))
    if not isinstance(chunk_id, str) or not chunk_id:
        raise ValueError(f"an edit names no chunk: {str(chunk_id)[:60]}")
    if continuity is not None and not isinstance(continuity, bool):
        raise ValueError(f"{chunk_id[:60]}: 'continuity' is not true, false or null")
    if cnm is not None:
        if not isinstance(cnm, dict):
            raise ValueError(f"{chunk_id[:60]}: 'cnm' is not a tag object")
        try:
            CNM.model_validate(cnm)
        except ValidationError as exc:
            raise ValueError(f"{chunk_id[:60]}: 'cnm' is not category / nouns / model text") from exc
    if sources is not None and not (isinstance(sources, dict) and all(
            k in PARTS and isinstance(v, str) for k, v in sources.items())):
        raise ValueError(f"{chunk_id[:60]}: 'sources' does not map category / nouns / model to text")
    return CnmEdit(chunk_id, cnm, continuity, sources)


def _stored_batches(path: Path) -> list[list[CnmEdit]]:
    """The batches in an edit file; ValueError with a short reason when it is damaged (any field of any edit)."""
    data = loads_checked(path.read_bytes())  # ValueError with the reason, RecursionError included
    if not isinstance(data, dict) or not isinstance(data.get("batches"), list):
        raise ValueError("no list of batches in it")
    if not all(isinstance(batch, list) for batch in data["batches"]):
        raise ValueError("a batch is not a list of edits")
    return [[stored_edit(e) for e in batch] for batch in data["batches"]]


class EditLog:
    """The hand edits of one library, on disk so they survive a restart and travel in an export.

    One JSON file per chunk run (named by `core.pipeline.run_key`), holding the batches of edits in the order
    they were applied: replaying them in that order rebuilds the edited run exactly, including CNMs that a
    flipped decision had extracted. Edits are plain data (chunk ids, tags, decisions), never chunk text.

    A damaged file is moved aside to `<name>.damaged-<UTC time>` (`keep_aside`), as the library's other damaged
    files are, so the next edit cannot overwrite it, and one line in `problems` says so (the page shows them).
    Adding a batch is a read-change-write under a lock, written atomically and durably: hand work is never lost
    to another session editing the same run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        #: one line per damaged or unreadable edit file met, in the order met, no repeats
        self.problems: list[str] = []

    def _note(self, line: str) -> None:
        if line not in self.problems:
            self.problems.append(line)

    def path(self, key: str) -> Path:
        if not _KEY_RE.match(key):
            raise ChunkLensError(f"'{key[:40]}' is not a chunk run key")
        return self.folder / f"{key}.json"

    def batches(self, key: str) -> list[list[CnmEdit]]:
        """The saved batches for this run: empty when none, and when the file is damaged (edits are redone by
        hand, never guessed; the file is kept aside and `problems` says so)."""
        return self._load(key)[0]

    def _load(self, key: str) -> tuple[list[list[CnmEdit]], bool]:
        """The saved batches, and whether the file may be written (False: a file is there that could be neither
        read nor kept aside, so writing would destroy it)."""
        path = self.path(key)
        try:
            return _stored_batches(path), True
        except FileNotFoundError:
            return [], True
        except OSError as exc:
            self._note(f"{path}: could not be read ({exc.strerror or exc.__class__.__name__}); the hand edits saved "
                       "for this run are not applied for now.")
            return [], False
        except ValueError as exc:
            return [], self._keep_aside(path, str(exc))

    def _keep_aside(self, path: Path, reason: str) -> bool:
        """Keep the damaged `path` aside and note it; False (and noted so) when it could not be moved."""
        from core.ingest.library import keep_damaged_aside

        moved, line = keep_damaged_aside(path, reason, "the hand edits saved for this run are not applied (redo them "
                                                       "by hand)")
        if line:
            self._note(line)
        return moved

    def append(self, key: str, spec: str, edits: Sequence[CnmEdit]) -> None:
        """Add one batch after the saved ones."""
        path = self.path(key)
        with locked(self.folder / ".lock"):
            saved, writable = self._load(key)
            if not writable:  # never written over: it may hold edits this session could not read
                raise ChunkLensError(f"{path}: could not be read or kept aside; the edits were not saved")
            data = {"spec": spec, "batches": [[_plain(e) for e in b] for b in [*saved, list(edits)]]}
            write_atomically(path, json.dumps(data), durable=True)

    def clear(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def run_keys(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json") if _KEY_RE.match(p.stem))
