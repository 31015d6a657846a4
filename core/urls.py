"""Server addresses as they may be shown, reported, exported or used as cache keys: without credentials.

A base URL may carry a user name and password (`http://user:pass@host/v1`, the way some proxies and hosted servers
take them). The HTTP client needs them; labels, bench reports, cache keys, error lines and exported settings do
not, and would put the password in front of every visitor or into files that travel. `redact_url` is what those
get.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """`url` with scheme, host, port and path only: user name, password, query and fragment dropped
    (`http://user:pass@host:8080/v1?key=x` gives `http://host:8080/v1`). An address without a scheme
    (`user:pass@host:8080`) loses its credentials the same way."""
    bare = "://" not in url
    try:
        parts = urlsplit(f"//{url}" if bare else url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket: show nothing of it rather than all of it
        return "(an address that is not a URL)"
    host = parts.netloc.rpartition("@")[2]
    redacted = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return redacted.removeprefix("//") if bare else redacted
