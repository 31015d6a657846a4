"""Chunk & compare shows the `page` chunker's line for a document without pages, and still shows its chunk."""

from __future__ import annotations

import re

from tests.support.appflow import new_session, run_chunks, upload


def test_chunk_and_compare_says_a_text_file_has_no_pages(tmp_path, monkeypatch):
    at = new_session(monkeypatch, tmp_path / "ws")
    at.session_state["specs"] = ["page"]
    at = run_chunks(upload(at, [("notes.txt", b"Charge the X100 battery for three hours.\n")]))
    line = "page: 'notes.txt' has no pages (only a PDF has them); kept whole as one chunk"
    assert [re.sub(r"\\(.)", r"\1", i.value) for i in at.info] == [line]  # as shown: md_escape's escapes undone
    assert list(at.dataframe[0].value["chunks"]) == [1]
