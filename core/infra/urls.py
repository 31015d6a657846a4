"""Server addresses as they may be shown, reported, exported or used as cache keys: without credentials; and one
spelling of an address for comparing two of them (core.infra.keys).

A base URL may carry a user name and password (`http://user:pass@host/v1`, the way some proxies and hosted servers
take them). The HTTP client needs them; labels, bench reports, cache keys, error lines and exported settings do
not, and would put the password in front of every visitor or into files that travel. `redact_url` is what those
get.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str | None) -> str:
    """`url` with scheme, host, port and path only: user name, password, query and fragment dropped
    (`http://user:pass@host:8080/v1?key=x` gives `http://host:8080/v1`). An address without a scheme
    (`user:pass@host:8080`) loses its credentials the same way."""
    url = (url or "").strip()
    if not url:
        return ""
    bare = "://" not in url
    try:
        parts = urlsplit(f"//{url}" if bare else url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket: show nothing of it rather than all of it
        return "(an address that is not a URL)"
    host = parts.netloc.rpartition("@")[2]
    redacted = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return redacted.removeprefix("//") if bare else redacted


def normalize_base_url(url: str | None) -> str:
    """One spelling of a base URL for comparing two of them: trimmed, no trailing slash, scheme and host in lower
    case; "" for none."""
    text = (url or "").strip().rstrip("/")
    if not text:
        return ""
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment))
