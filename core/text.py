"""Span-level text units: paragraphs, lines, sentences, words. Every function returns (start, end) offsets
into the string it was given, never copies, so chunkers can build exact spans from them.

"Word" follows one rule everywhere: a run of non-space characters, except that each CJK character is a word of
its own (Chinese and Japanese have no spaces; counting whitespace runs would make a page one "word").
"""

from __future__ import annotations

import re
from functools import lru_cache

import pysbd

Span = tuple[int, int]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af"
_WORD_RE = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_LINE_BREAK_RE = re.compile(r"\n\s*")


def strip_span(text: str, start: int, end: int) -> Span:
    """Shrink [start, end) so it neither starts nor ends with whitespace (may become empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_on(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    pos = start
    for m in pattern.finditer(text, start, end):
        s, e = strip_span(text, pos, m.start())
        if e > s:
            spans.append((s, e))
        pos = m.end()
    s, e = strip_span(text, pos, end)
    if e > s:
        spans.append((s, e))
    return spans


def paragraphs(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Blank-line separated blocks."""
    return _split_on(_PARAGRAPH_BREAK_RE, text, start, len(text) if end is None else end)


def lines(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    return _split_on(_LINE_BREAK_RE, text, start, len(text) if end is None else end)


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    # English rules also split on the CJK full stops 。！？ (checked in tests).
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences by pysbd, run paragraph by paragraph (linear time; no sentence crosses a paragraph break).

    Only pysbd's sentence ends are used, as cut points, so the sentences always cover the paragraph exactly.
    """
    end = len(text) if end is None else end
    out: list[Span] = []
    for ps, pe in paragraphs(text, start, end):
        cuts = sorted({ps + piece.end for piece in _segmenter().segment(text[ps:pe]) if 0 < piece.end < pe - ps})
        bounds = [ps, *cuts, pe]
        for s, e in zip(bounds, bounds[1:]):
            s, e = strip_span(text, s, e)
            if e > s:
                out.append((s, e))
    return out


def words(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    return [m.span() for m in _WORD_RE.finditer(text, start, len(text) if end is None else end)]


def count_words(text: str) -> int:
    return sum(1 for _ in _WORD_RE.finditer(text))
