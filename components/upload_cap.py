"""A server-side limit on everything one browser session has uploaded (core.infra.uploads.check_session_total).

Streamlit's upload handler stores each file a visitor picks in its `MemoryUploadedFileManager` as soon as it
arrives, before any script runs, and checks only `server.maxUploadSize` per file. The per-widget limits live in
the browser, where a visitor's own script ignores them. So a shared server wraps the manager's `add_file`: a file
that would take the session past the operator's total is refused with HTTP 413 and never stored.
"""

from __future__ import annotations

import functools
from typing import Any

from core.infra.uploads import SessionUploadsFull, check_session_total

_MARK = "_chunklens_session_cap"


def _refusal(exc: SessionUploadsFull) -> Exception:
    """What the upload route turns into a 413 with the line as its detail; the plain error without Starlette."""
    try:
        from starlette.exceptions import HTTPException
    except ImportError:  # pragma: no cover (Streamlit 1.67 serves through Starlette)
        return exc
    return HTTPException(status_code=413, detail=str(exc))


def cap_session_uploads(manager: Any, cap_bytes: int) -> None:
    """Make `manager` (a MemoryUploadedFileManager) refuse a file that would take its session past `cap_bytes`;
    called again, it only changes the cap."""
    if getattr(manager, _MARK, None) is not None:
        setattr(manager, _MARK, cap_bytes)
        return
    setattr(manager, _MARK, cap_bytes)
    add_file = manager.add_file

    @functools.wraps(add_file)
    def capped(session_id: str, file: Any) -> None:
        # the upload route calls this on the server's event loop, so no other add for the session comes between
        with manager._lock:
            held = {fid: len(rec.data) for fid, rec in manager.file_storage.get(session_id, {}).items()}
        try:
            check_session_total(held, file.file_id, len(file.data), getattr(manager, _MARK), file.name)
        except SessionUploadsFull as exc:
            raise _refusal(exc) from None
        add_file(session_id=session_id, file=file)

    manager.add_file = capped


def file_limit_mb(max_upload_mb: int, session_mb: int) -> int:
    """The largest single upload any of the app's widgets accepts on this server: a document (the operator's
    `max_upload_mb`) or a ChunkLens archive (MAX_ARCHIVE_BYTES), never more than a session may hold at all."""
    from core.outputs.archive import MAX_ARCHIVE_BYTES

    return max(1, min(max(max_upload_mb, -(-MAX_ARCHIVE_BYTES // 2**20)), session_mb))


def limit_each_file(limit_mb: int) -> None:
    """Lower Streamlit's own per-file cap (`server.maxUploadSize`, which its upload route reads per request and
    enforces while the body streams in) to `limit_mb`, when it is higher: the local default of 2048 MB would let
    one request buffer 2 GB before the session's total could refuse it."""
    from streamlit import config

    if config.get_option("server.maxUploadSize") > limit_mb:
        config.set_option("server.maxUploadSize", limit_mb, where_defined="ChunkLens shared server")


def install(cap_bytes: int, file_mb: int | None = None) -> bool:
    """Cap the running server's uploads per session (and each file at `file_mb`); False when no server runs
    (AppTest, a bare script)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return False
    if file_mb is not None:
        limit_each_file(file_mb)
    cap_session_uploads(Runtime.instance().uploaded_file_mgr, cap_bytes)
    return True
