"""Chunk & compare's "Use it in your code": one expander per chunker that ran, holding the chunker's own snippet."""

from __future__ import annotations

import re

from core.chunkers.registry import make_chunker
from tests.support.appflow import new_session, run_chunks, upload

SPECS = ["naive-500t", "langchain-recursive:chunk_size=300:chunk_overlap=30"]
TEXT = ("Charge the X100 battery for three hours before first use.\n\n"
        "Clean the filter every two weeks with lukewarm water.\n") * 20


def test_each_chunker_that_ran_shows_its_snippet_in_an_expander(tmp_path, monkeypatch):
    at = new_session(monkeypatch, tmp_path / "ws")
    at.session_state["specs"] = SPECS
    at = run_chunks(upload(at, [("notes.txt", TEXT.encode())]))
    labels = [re.sub(r"\\(.)", r"\1", e.label) for e in at.expander]  # md_escape's escapes undone
    assert [label for label in labels if label.startswith("Use it in your code")] == \
        [f"Use it in your code: {spec}" for spec in SPECS]
    shown = [c for c in at.code if c.language == "python"]
    assert [c.value.strip() for c in shown] == [make_chunker(spec).snippet().strip() for spec in SPECS]
    assert "RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=30)" in shown[1].value
