"""The network made unreachable inside a test's process, or a child's: every connection and name look-up to a host
other than this machine raises OSError, as on a machine without a network. Loopback stays open (local servers).

In a child process: put `OFFLINE_SITE` first on PYTHONPATH (its sitecustomize calls `block_network` before any
import), so what a library does when it is imported is caught too."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Any

#: a folder whose sitecustomize.py blocks the network at a child's start-up
OFFLINE_SITE = Path(__file__).with_name("offline_site")
#: every attempt refused, as (what, address), for a test to show what was tried
REFUSED: list[tuple[str, str]] = []


def _local(host: Any) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        address = ipaddress.ip_address(str(host).split("%")[0])
    except ValueError:
        return str(host).endswith(".localhost")
    return address.is_loopback or address.is_unspecified


def _refuse(what: str, host: Any) -> None:
    REFUSED.append((what, str(host)))
    raise OSError(f"network unreachable in this test: {what} {host}")


def block_network() -> None:
    """Patch the socket module: non-loopback connects and look-ups raise OSError (Unix sockets are left alone)."""
    if getattr(socket, "_chunklens_offline", False):
        return
    real_connect, real_connect_ex, real_getaddrinfo = (socket.socket.connect, socket.socket.connect_ex,
                                                       socket.getaddrinfo)

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _refuse("connect", address[0])
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _refuse("connect", address[0])
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _local(host.decode() if isinstance(host, bytes) else host):
            _refuse("look-up", host)
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
    socket._chunklens_offline = True  # type: ignore[attr-defined]
