"""Reading an uploaded file without trusting its size.

Streamlit's own cap is the server's (2 GB by default), and `getvalue()` copies the whole upload. Each kind of upload
(a QA set, a tag file, an archive) has its own limit in the module that reads it; `read_upload` reads at most one
byte past that limit, so a file over it costs no more memory than the limit, and refuses it in one line naming the
file, its size and the limit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Mapping
from typing import IO

from core.infra.errors import ChunkLensError


class UploadError(ChunkLensError):
    """An uploaded file refused before it is read: over the size limit for its kind."""


def megabytes(n: int) -> str:
    """A size for people, in MB with at most one decimal ('20 MB', '60.2 MB'); small sizes in KB or bytes."""
    if n >= 2**20:
        return f"{n / 2**20:.1f}".removesuffix(".0") + " MB"
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"


def limit_mb(limit: int) -> int:
    """The limit in whole MB (at least 1), as `st.file_uploader(max_upload_size=...)` takes it."""
    return max(1, -(-limit // 2**20))


def _declared_size(file: IO[bytes]) -> int | None:
    """The size the upload says it has (Streamlit's UploadedFile.size), else its length when it can seek."""
    size = getattr(file, "size", None)
    if isinstance(size, int):
        return size
    with contextlib.suppress(AttributeError, OSError, ValueError):
        here = file.tell()
        end = file.seek(0, 2)
        file.seek(here)
        return end
    return None


def read_upload(file: IO[bytes], name: str, limit: int, kind: str) -> bytes:
    """The upload's bytes, at most `limit` of them: a bigger file is an UploadError
    `"<name>: 60.2 MB, over the 20 MB limit for <kind>"`, raised before (or after reading just past) the limit."""
    size = _declared_size(file)
    if size is not None and size > limit:
        raise UploadError(f"{name}: {megabytes(size)}, over the {megabytes(limit)} limit for {kind}")
    with contextlib.suppress(AttributeError, OSError, ValueError):
        file.seek(0)  # the same upload may have been read on an earlier run of the page
    data = file.read(limit + 1)
    if len(data) > limit:
        raise UploadError(f"{name}: over the {megabytes(limit)} limit for {kind}")
    return data


class SessionUploadsFull(UploadError):
    """One visitor's uploads held by the server (every tab, submitted or not) would pass the operator's total."""


def check_session_total(held: Mapping[Hashable, int], file_id: Hashable, size: int, cap: int, name: str = "") -> None:
    """Refuse an upload that would take one visitor's held uploads past `cap` bytes.

    `held` maps the upload ids of every session of the visitor (one client, core.infra.clients) to their sizes.
    Streamlit keeps every file a visitor picks in server memory until the widget is cleared or the session ends,
    whether or not a form is ever submitted, and its own limit is per file: without a total, one visitor parked
    4 x 150 MB; with a total per session, the same visitor parked it again from a second tab. A file sent again
    under its own id replaces itself, so it is counted once."""
    total = sum(n for fid, n in held.items() if fid != file_id) + size
    if total > cap:
        raise SessionUploadsFull(
            f"{name or 'upload'}: {megabytes(size)} would bring this visitor's uploads (in every tab) to "
            f"{megabytes(total)}, over the server's {megabytes(cap)} limit per visitor (max_session_upload_mb); "
            "clear some uploads first")
