"""On a shared server, a visitor's "Clear caches" clears only that visitor's session.

Streamlit's menu item (and the `clear_cache` message any browser can send over its websocket, menu shown or not)
clears `st.cache_resource` for the whole process: every session's cached services (embedder, store, LLM
clients) would be dropped and loaded again, by any visitor, as often as they like. A shared server replaces the
handler with one that clears the sender's own session state; the operator restarts the server to clear the rest.
"""

from __future__ import annotations

from typing import Any

_MARK = "_chunklens_session_only"
#: the AppSession method a "Clear caches" message calls (private: replaced by name, and only where it exists)
_HANDLER = "_handle_clear_cache_request"


def _clear_own_session(self: Any) -> None:
    """The sender's session state only: the process's caches belong to every session."""
    self._session_state.clear()


def keep_shared_caches() -> bool:
    """Make every session's "Clear caches" clear only its own state; False when Streamlit has no such handler."""
    from streamlit.runtime.app_session import AppSession

    if not hasattr(AppSession, _HANDLER):
        return False
    if not getattr(getattr(AppSession, _HANDLER), _MARK, False):
        setattr(_clear_own_session, _MARK, True)
        setattr(AppSession, _HANDLER, _clear_own_session)
    return True
