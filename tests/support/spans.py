"""The span check every chunker's output is held to in the tests: each chunk is its exact span, trimmed, in order,
and together they cover the text (gaps only whitespace)."""

from __future__ import annotations

from core.tokens import count_tokens


def check_spans(text: str, chunks, windows: bool = False, covers: bool = True) -> None:
    """`windows`: token-window chunks, whose token_count is the window's (checked in
    tests/unit/test_chunker_properties.py::test_naive_windows). `covers=False`: a chunker that leaves text out by
    design (Docling keeps headings in metadata), whose gaps are checked by its own tests."""
    assert chunks or not text.strip(), "non-empty text produced no chunks"
    for c in chunks:
        assert text[c.start : c.end] == c.text, "chunk text is not its exact span"
        assert c.text and not c.text[0].isspace() and not c.text[-1].isspace()
        if not windows:
            assert c.token_count == count_tokens(c.text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end, "chunks out of order"
        assert b.index == a.index + 1
    if not covers:
        return
    covered = 0
    for c in chunks:
        if c.start > covered:
            gap = text[covered : c.start]
            assert not gap.strip(), f"uncovered text {text[covered:c.start]!r}"
        covered = max(covered, c.end)
    assert not text[covered:].strip(), "text after the last chunk is uncovered"
