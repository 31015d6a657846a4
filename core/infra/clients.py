"""Who a request is for: the client a shared server counts its limits by.

A shared server's limits (uploads held, file readers at once, paid requests per hour) are meant per visitor. A
browser session or a library id cannot stand for one: a visitor opens any number of tabs and mints `?lib=` ids for
free. So the limits are counted per *client address*, which a visitor cannot multiply by reloading:

- the TCP peer of the visitor's connection, as Streamlit's server (uvicorn) saw it;
- IPv6 addresses grouped by their /64, the block one subscriber is usually given (an address within it costs
  nothing to change);
- X-Forwarded-For only where the operator named the proxy it came through (`trusted_proxies`): the entries are
  read from the right, each hop the operator trusts giving way to the one before it, so whatever a client wrote
  into the header itself is never reached, and a client that reaches the server directly gains nothing by
  sending one. Without a named proxy the connection's address is the client: everyone behind an unnamed proxy
  shares one allowance (never more), and the operator's fix is to name it. Streamlit's server (uvicorn) applies
  the same rule before ChunkLens sees the address, for the peers in its `FORWARDED_ALLOW_IPS` (loopback unless
  set); `scripts/run-app.sh` sets that empty, so the operator's `trusted_proxies` is the only list.

A signed cookie was the other choice, and the weaker one: a client that drops its cookies is a new client, so
the allowance would multiply as cheaply as sessions do. Addresses have the opposite fault, which is the safe one:
visitors behind one NAT share an allowance. A session that has no address at all (AppTest, a bare script) counts
as a client of its own (`session:<id>`).

The id of the client a piece of work is for travels in a context variable (`current_client`), set at the start of
each script run like the paid-request budget, and copied into the threads that work for that run.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(entries: Iterable[str]) -> list[Network]:
    """The operator's proxies (addresses or networks such as `10.0.0.0/8`); ValueError names a bad one."""
    out: list[Network] = []
    for entry in entries:
        try:
            out.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return out


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped or ip


def client_key(address: str) -> str:
    """The allowance `address` draws on: an IPv4 address as it is, an IPv6 one as its /64, anything else (a
    hostname a proxy wrote) as written."""
    ip = _ip(address)
    if ip is None:
        return address.strip()
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def client_address(peer: str | None, forwarded_for: Iterable[str], trusted: list[Network]) -> str | None:
    """The client behind a connection from `peer` whose X-Forwarded-For headers are `forwarded_for`, through the
    operator's `trusted` proxies; None when the connection has no address. See the module's docstring."""
    if peer is None:
        return None
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",") if hop.strip()]
    address = peer
    while hops and (ip := _ip(address)) is not None and any(ip in net for net in trusted):
        address = hops.pop()
    return address


_CURRENT: ContextVar[str | None] = ContextVar("chunklens_client", default=None)


def current_client() -> str | None:
    """The client the running work is for (a `client_key`), or None outside any (the command line, a test)."""
    return _CURRENT.get()


def start_client(client: str | None) -> None:
    """Put the rest of this thread's work under `client`: a Streamlit script run calls it first (see
    `core.llm.budget.start_budget`, which has the same shape for the same reason)."""
    _CURRENT.set(client)


@contextmanager
def client_scope(client: str | None) -> Iterator[None]:
    """Run the block for `client`."""
    token = _CURRENT.set(client)
    try:
        yield
    finally:
        _CURRENT.reset(token)
