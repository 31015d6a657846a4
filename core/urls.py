"""Base URLs as ChunkLens compares and shows them: credentials never shown, and one spelling per address."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str | None) -> str:
    """`url` without the `user:password@` part, for labels, reports, cache keys and exports (the request itself
    keeps it). Text that is not a URL with a host comes back stripped of anything before an `@`."""
    text = (url or "").strip()
    if "@" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return text.rsplit("@", 1)[-1]
    if not parts.netloc:
        return text.rsplit("@", 1)[-1]
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


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
