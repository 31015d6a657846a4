"""Which client a browser session belongs to, from its connection (the rule is core.infra.clients').

Streamlit keeps each session's WebSocket handshake (`SessionClient.client_context`): the TCP peer as its server saw
it and the request's headers. Both the script (through its session id) and the upload route (which names the
session it stores a file for) find the client from there, so the same visitor is the same client on every tab.
"""

from __future__ import annotations

from typing import Any

from core.infra.clients import Network, client_address, client_key, trusted_networks


def connection(session_id: str) -> Any | None:
    """The session's `ClientContext` (remote_ip, headers), or None without a server or a connected client."""
    from streamlit import runtime

    if not runtime.exists():
        return None
    client = runtime.get_instance().get_client(session_id)
    return getattr(client, "client_context", None) if client is not None else None


def session_client(session_id: str, trusted: list[Network]) -> str:
    """The client key of the session (`core.infra.clients.client_key` of its address); a session without an
    address (AppTest, a bare script) is a client of its own, `session:<id>`."""
    context = connection(session_id)
    address = None
    if context is not None:
        forwarded = [value for name, value in context.headers if name.lower() == "x-forwarded-for"]
        address = client_address(context.remote_ip, forwarded, trusted)
    return client_key(address) if address else f"session:{session_id}"


def this_client(trusted_proxies: list[str]) -> str:
    """The client of the running script's session."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return session_client(ctx.session_id if ctx else "", trusted_networks(trusted_proxies))
