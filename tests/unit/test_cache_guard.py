"""On a shared server no visitor clears every session's cached services (issue 39, lower findings): Streamlit's
"Clear caches" (a websocket message any browser can send) clears `st.cache_resource` for the whole process."""

from __future__ import annotations

from types import SimpleNamespace

import streamlit as st
from streamlit.runtime.app_session import AppSession

from components.cache_guard import keep_shared_caches


def test_a_visitors_clear_cache_clears_only_their_own_session(monkeypatch):
    # restored after the test: the guard replaces the handler for the whole process, as a shared server wants
    monkeypatch.setattr(AppSession, "_handle_clear_cache_request", AppSession._handle_clear_cache_request)

    @st.cache_resource
    def services() -> object:
        return object()

    loaded = services()
    assert keep_shared_caches() and keep_shared_caches()  # twice is once
    visitor = SimpleNamespace(_session_state={"lib_id": "abcdef12"})
    AppSession._handle_clear_cache_request(visitor)
    assert visitor._session_state == {}  # their own state is cleared, as they asked
    assert services() is loaded  # every other session's services stay loaded
