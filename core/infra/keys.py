"""Which API key goes to which address.

The rule, in every mode: the server's key (OPENAI_API_KEY) goes only to base URLs the operator named (the server's
config, its environment, the command line) and to api.openai.com; never to an address typed in a browser. A key
a visitor types goes only where that visitor's own session points, since a session's settings are its own. The
OpenAI clients are always given their key from here, never left to read the environment themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from core.infra.urls import normalize_base_url


@dataclass(frozen=True)
class KeyRing:
    server_key: str | None = field(default=None, repr=False)
    trusted: frozenset[str] = frozenset({""})
    session_key: str | None = field(default=None, repr=False)

    def key_for(self, base_url: str | None) -> str | None:
        """The key for a request to `base_url` (None or "" is the client's default, api.openai.com)."""
        if normalize_base_url(base_url) in self.trusted:
            return self.session_key or self.server_key
        return self.session_key

    def digest_part(self) -> str:
        """What distinguishes two key rings for a cache of built clients, without the keys themselves."""
        import hashlib

        text = f"{self.session_key or ''}\x00{self.server_key or ''}\x00{sorted(self.trusted)}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def operator(cls, base_urls: Iterable[str | None], session_key: str | None = None) -> KeyRing:
        """The server's key trusted for the given operator addresses (plus api.openai.com and OPENAI_BASE_URL)."""
        trusted = {"", normalize_base_url("https://api.openai.com/v1"),
                   normalize_base_url(os.environ.get("OPENAI_BASE_URL"))}
        trusted.update(normalize_base_url(u) for u in base_urls)
        return cls(os.environ.get("OPENAI_API_KEY") or None, frozenset(trusted), session_key)
