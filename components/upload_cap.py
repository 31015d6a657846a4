"""A server-side limit on everything one visitor has uploaded (core.infra.uploads.check_session_total).

Streamlit's upload handler stores each file a visitor picks in its `MemoryUploadedFileManager` as soon as it
arrives, before any script runs, and checks only `server.maxUploadSize` per file. The per-widget limits live in
the browser, where a visitor's own script ignores them. So a shared server wraps the manager's `add_file`: a file
that would take the visitor past the operator's total is refused with HTTP 413 and never stored. The total is
the visitor's, not the session's: every session of the same client (components.clients, by address) counts, so a
second tab brings no second allowance.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from core.infra.uploads import SessionUploadsFull, check_session_total

_MARK = "_chunklens_session_cap"
#: session id -> its client (a client key, or the session itself when it has no address)
ClientOf = Callable[[str], str]


def _refusal(exc: SessionUploadsFull) -> Exception:
    """What the upload route turns into a 413 with the line as its detail; the plain error without Starlette."""
    try:
        from starlette.exceptions import HTTPException
    except ImportError:  # pragma: no cover (Streamlit 1.67 serves through Starlette)
        return exc
    return HTTPException(status_code=413, detail=str(exc))


def cap_session_uploads(manager: Any, cap_bytes: int, client_of: ClientOf | None = None) -> None:
    """Make `manager` (a MemoryUploadedFileManager) refuse a file that would take its client's sessions past
    `cap_bytes`; `client_of` names each session's client (None: each session is a client of its own). Called
    again, it only changes the cap and the rule."""
    setattr(manager, _MARK, (cap_bytes, client_of or (lambda session_id: session_id)))
    if getattr(manager, "_chunklens_capped", False):
        return
    manager._chunklens_capped = True
    add_file = manager.add_file
    known: dict[str, str] = {}  # sessions' clients as first seen: a session that lost its connection keeps its files

    def whose(session_id: str, client_of: ClientOf) -> str:
        if session_id not in known:
            client = client_of(session_id)
            if client == session_id or client.startswith("session:"):
                return client  # no address yet: asked again next time
            known[session_id] = client
        return known[session_id]

    @functools.wraps(add_file)
    def capped(session_id: str, file: Any) -> None:
        cap, client_of = getattr(manager, _MARK)
        # the upload route calls this on the server's event loop, so no other add comes between
        with manager._lock:
            held = {sid: {fid: len(rec.data) for fid, rec in files.items()}
                    for sid, files in manager.file_storage.items()}
        for gone in set(known) - set(held) - {session_id}:
            del known[gone]
        me = whose(session_id, client_of)
        mine: dict[Hashable, int] = {(sid, fid): n for sid, files in held.items()
                                     if sid == session_id or whose(sid, client_of) == me for fid, n in files.items()}
        try:
            check_session_total(mine, (session_id, file.file_id), len(file.data), cap, file.name)
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


def install(cap_bytes: int, file_mb: int | None = None, trusted_proxies: list[str] | None = None) -> bool:
    """Cap the running server's uploads per visitor (each session's client, read through `trusted_proxies`) and
    each file at `file_mb`; False when no server runs (AppTest, a bare script)."""
    from streamlit.runtime import Runtime

    from components.clients import session_client
    from core.infra.clients import trusted_networks

    if not Runtime.exists():
        return False
    if file_mb is not None:
        limit_each_file(file_mb)
    trusted = trusted_networks(trusted_proxies or [])
    cap_session_uploads(Runtime.instance().uploaded_file_mgr, cap_bytes,
                        lambda session_id: session_client(session_id, trusted))
    return True
