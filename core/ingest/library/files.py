"""What the library keeps on disk, below any one library: ids and the names files may take, reading stored
JSON and documents, and keeping a damaged file aside instead of losing it."""

from __future__ import annotations

import json
import os
import re
import secrets
import unicodedata
from collections.abc import Callable
from contextlib import suppress
from dataclasses import fields
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import TypeGuard

from core.ingest.documents import slugify
from core.schema.documents import Document, Segment

_ID_RE = re.compile(r"[a-z0-9]{6,32}")  # whole ids only (fullmatch): `$` would let "abcdef\n" through
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


def why_failed(exc: BaseException) -> str:
    """A failed write's reason in a few words."""
    if isinstance(exc, OSError):
        return exc.strerror or exc.__class__.__name__
    return str(exc)[:160]


def undo_steps(steps: list[Callable[[], object]]) -> None:
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


def read_json(path: Path):
    """The JSON in `path`; a damaged file raises ValueError with a short reason, a missing one FileNotFoundError."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(_json_reason(exc)) from None


_DOC_FIELDS = {f.name for f in fields(Document)} - {"segments"}  # fields a newer version may add are ignored


def stored_document(path: Path) -> Document:
    """A document as `Library._store` wrote it; ValueError with the reason when the file is damaged."""
    data = read_json(path)
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


#: (path, size, modification time, inode) -> UTF-8 bytes of the stored document's text: a stored text is written
#: once and never changed in place, so a library's total is read from disk once per document per process
_TEXT_BYTES: dict[tuple[str, int, int, int], int] = {}
_TEXT_BYTES_KEPT = 100_000


def text_bytes(doc: Document) -> int:
    """What a document's text weighs toward its library's cap: its UTF-8 bytes."""
    return len(doc.text.encode("utf-8", "surrogatepass"))


def stored_text_bytes(path: Path) -> int:
    """`text_bytes` of the document stored at `path`; 0 when it is gone or damaged (the library leaves it out)."""
    try:
        st = path.stat()
    except OSError:
        return 0
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _TEXT_BYTES:
        try:
            size = text_bytes(stored_document(path))
        except (OSError, ValueError):
            return 0
        if len(_TEXT_BYTES) >= _TEXT_BYTES_KEPT:
            _TEXT_BYTES.clear()
        _TEXT_BYTES[key] = size
    return _TEXT_BYTES[key]


def new_library_id() -> str:
    return secrets.token_hex(6)


def valid_library_id(lib_id: str | None) -> TypeGuard[str]:
    return bool(lib_id) and isinstance(lib_id, str) and _ID_RE.fullmatch(lib_id) is not None


def file_safe(doc_id: str) -> bool:
    """An id `Library._store` could have written: one plain file name (what `_inside` lets through)."""
    return doc_id not in ("", ".", "..") and "/" not in doc_id and "\x00" not in doc_id


def listing(folder: Path) -> list[Path]:
    """The folder's entries; none when it was never made (a library nothing was written to yet)."""
    try:
        return list(folder.iterdir())
    except FileNotFoundError:
        return []


def valid_doc_id(doc_id: str) -> bool:
    """A doc id as `slugify` makes them: safe as a file name in the library."""
    return bool(doc_id) and slugify(doc_id) == doc_id


