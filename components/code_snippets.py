""""Use it in your code" on Chunk & compare: per chunker, the Python that builds the same chunker in the user's own
stack. The snippet is the chunker's own (`Chunker.snippet`, core/chunkers/snippets.py); this only shows it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from components.html import md_escape
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError


def snippet_of(spec: str, run: Any) -> str | None:
    """The snippet of the chunker that made `run` (built again from its spec, unchecked for services, when the run
    does not carry it)."""
    chunker = getattr(run, "chunker", None)
    if chunker is None:
        try:
            chunker = make_chunker(spec)
        except ConfigError:
            return None
    return chunker.snippet()


def show(results: Mapping[str, Any]) -> None:
    """One expander per chunker that ran: its snippet, or a line saying it has none."""
    for spec, r in results.items():
        with st.expander(f"Use it in your code: {md_escape(spec)}"):
            snippet = snippet_of(spec, r.run)
            if snippet is None:
                st.caption("This chunker offers no snippet.")
            else:
                st.code(snippet, language="python")
