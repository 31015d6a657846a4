"""Span-level text units: paragraphs, lines, sentences, words. Every function returns (start, end) offsets
into the string it was given, never copies, so chunkers can build exact spans from them.

"Word" follows one rule everywhere: a run of non-space characters, except that each CJK character is a word of
its own (Chinese and Japanese have no spaces; counting whitespace runs would make a page one "word").
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

import numpy as np
import pysbd
import sentencex

from core.infra.stopping import check_stop

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
    """Sentences by pysbd, run paragraph by paragraph (no sentence crosses a paragraph break); a paragraph longer
    than `PYSBD_BLOCK` characters is read block by block (see `_long_paragraph`) so the time stays linear.

    Only pysbd's sentence ends are used, as cut points, so the sentences always cover the paragraph exactly.
    The sentences of the last few texts are kept: `sentence`, `cosine`, `semantic` and `lg` all start from the
    same document's, and pysbd reads about 0.14 MB a second.
    """
    return list(_sentence_spans(text, start, len(text) if end is None else end))


@lru_cache(maxsize=8)
def _sentence_spans(text: str, start: int, end: int) -> tuple[Span, ...]:
    out: list[Span] = []
    for ps, pe in paragraphs(text, start, end):
        check_stop()  # pysbd reads 0.15 MB a second: a stopped chunk run ends at the next paragraph
        out.extend(_long_paragraph(text, ps, pe) if pe - ps > PYSBD_BLOCK else _pysbd_sentences(text, ps, pe))
    return tuple(out)


#: pysbd's abbreviation pass rescans its whole input once per abbreviation it meets, so its time grows with the
#: square of the length (100k characters: 6.5 s on the 2-core machine; a 5 MB line: hours). Longer paragraphs
#: are given to it in blocks of this many characters.
PYSBD_BLOCK = 10_000
_CONTEXT = 200  # a cut is kept only with at least this much text after it in the block pysbd saw
_SPACE_RE = re.compile(r"\s")
_MAY_END_RE = re.compile(r"[.!?;:…‽。！？．｡\n\r]")


def _long_paragraph(text: str, start: int, end: int) -> list[Span]:
    """pysbd's sentences of a long paragraph, one block at a time. Of each block's sentences only those ending
    at least _CONTEXT characters before the block's end are kept (pysbd saw what follows them, so an "e.g." or
    "Dr." there is judged as on the whole text); the next block starts where the first dropped one did. The
    result equals pysbd's on the whole paragraph except where pysbd's rules look across its whole input (list
    markers like "2)", parentheses, unbalanced quotes); tests/test_chunker_properties.py checks the rest. A block
    with no sentence end is part of one giant sentence: it is cut at its last whitespace (or at its end), as no
    chunker keeps such a sentence whole anyway. Each step moves on by nearly a block, or the next one does."""
    out: list[Span] = []
    pos = start
    while end - pos > PYSBD_BLOCK:
        check_stop()
        limit = pos + PYSBD_BLOCK
        found = _pysbd_sentences(text, pos, limit)
        if len(found) > 1:
            keep = [s for s in found[:-1] if s[1] <= limit - _CONTEXT] or found[:-1]
            out.extend(keep)
            pos = found[len(keep)][0]
            continue
        cut = _last_match_end(_SPACE_RE, text, pos + PYSBD_BLOCK // 2, limit) or limit
        out.extend(_pysbd_sentences(text, pos, cut))
        pos = cut
    out.extend(_pysbd_sentences(text, pos, end))
    return out


def _last_match_end(pattern: re.Pattern[str], text: str, start: int, end: int) -> int | None:
    """End of the last match of `pattern` inside text[start:end], or None."""
    last = None
    for m in pattern.finditer(text, start, end):
        last = m.end()
    return last


def _pysbd_sentences(text: str, ps: int, pe: int) -> list[Span]:
    """pysbd's sentences of text[ps:pe] as stripped spans that cover it. A piece without any character pysbd
    cuts after (checked on random text) is one sentence, and pysbd is not run on it."""
    out: list[Span] = []
    if _MAY_END_RE.search(text, ps, pe):
        cuts = sorted({ps + piece.end for piece in _segmenter().segment(text[ps:pe]) if 0 < piece.end < pe - ps})
    else:
        cuts = []
    bounds = [ps, *cuts, pe]
    for s, e in zip(bounds, bounds[1:]):
        s, e = strip_span(text, s, e)
        if e > s:
            out.append((s, e))
    return out


def separator_sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences by sentencex (Wikimedia's rule-based segmenter, compiled): the sentence level of the recursive
    splitter, which runs over every long paragraph of every document, so its speed is the chunker's speed
    (sentencex reads ~50 MB/s here, pysbd ~0.15 MB/s). `sentences` (pysbd) stays the unit of the chunkers that
    embed or score sentence by sentence. Stripped spans that cover text[start:end]; none crosses a paragraph
    break."""
    end = len(text) if end is None else end
    piece = text[start:end]
    if not _MAY_END_RE.search(piece):
        s, e = strip_span(text, start, end)
        return [(s, e)] if e > s else []
    out: list[Span] = []
    for found in sentencex.get_sentence_boundaries("en", piece):
        s, e = strip_span(text, start + found["start_index"], start + found["end_index"])
        if e > s:
            out.append((s, e))
    return out


def words(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    return [m.span() for m in _WORD_RE.finditer(text, start, len(text) if end is None else end)]


class WordIndex:
    """Where the words of one text start, so the words of any span of it are counted in O(log n): the recursive
    splitter measures every piece at every level, and counting by regex each time cost it several passes over the
    text. `count(start, end)` equals `count_words(text[start:end])`."""

    def __init__(self, text: str) -> None:
        self.text = text
        code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        # one lookup gives both classes; no space and no CJK character lies above the BMP, and every character
        # there reads as U+FFFF, which is neither
        kind = _char_kinds()[np.minimum(code_points, 0xFFFF)]
        space = (kind & _SPACE).astype(bool)
        cjk = (kind & _CJK_CHAR).astype(bool)
        word_char = ~space
        before = np.concatenate(([True], space[:-1] | cjk[:-1])) if len(text) else np.zeros(0, bool)
        self._starts_array = np.flatnonzero(word_char & (cjk | before))
        self._glued_array = word_char & ~cjk & ~before  # a word goes on from the previous character
        self.starts = self._starts_array.tolist()
        # read one position at a time: a view of the array as bytes, no copy (a list of 1.4 M bools took 25 ms)
        self._glued = memoryview(self._glued_array.view(np.uint8))

    def count(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        n = bisect.bisect_left(self.starts, end) - bisect.bisect_left(self.starts, start)
        return n + 1 if self._glued[start] else n

    def count_many(self, spans: Sequence[Span]) -> list[int]:
        """`count` of every span: one array lookup for a long list (a level's parts, a run of words)."""
        if len(spans) < _BATCH_FROM or not self.text:
            return [self.count(s, e) for s, e in spans]
        bounds = np.asarray(spans, dtype=np.int64)
        starts, ends = bounds[:, 0], bounds[:, 1]
        n = np.searchsorted(self._starts_array, ends) - np.searchsorted(self._starts_array, starts)
        nonempty = ends > starts
        n += nonempty & self._glued_array[np.where(nonempty, starts, 0)]
        return np.where(nonempty, n, 0).tolist()


#: below this many spans, counting them one by one is cheaper than building arrays
_BATCH_FROM = 16


_SPACE, _CJK_CHAR = 1, 2


@lru_cache(maxsize=1)
def _char_kinds() -> np.ndarray:
    """For each BMP character, _SPACE if it is a space (as `\\s` means it) | _CJK_CHAR if it is CJK; built on
    first use."""
    cjk = re.compile(rf"[{_CJK}]")
    kinds = np.array([(_SPACE if c.isspace() else 0) | (_CJK_CHAR if cjk.match(c) else 0)
                      for c in map(chr, range(0x10000))], dtype=np.uint8)
    assert kinds[0xFFFF] == 0  # what WordIndex reads for a character above the BMP
    return kinds


def are_spaces(code_points: np.ndarray) -> np.ndarray:
    """Whether each code point is a space, as `str.isspace` says (none above the BMP is)."""
    return (_char_kinds()[np.minimum(code_points, 0xFFFF)] & _SPACE).astype(bool)


@lru_cache(maxsize=4)
def word_index(text: str) -> WordIndex:
    """The `WordIndex` of `text`, kept for the last few texts (a chunker measures one document many times)."""
    return WordIndex(text)


def clear_caches() -> None:
    """Forget what is kept per text (word indexes, sentences), so that a benchmark's every run starts cold."""
    word_index.cache_clear()
    _sentence_spans.cache_clear()


def count_words(text: str) -> int:
    return sum(1 for _ in _WORD_RE.finditer(text))


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """YAKE's English stop words (575 words, shipped inside the `yake` package)."""
    text = resources.files("yake.core").joinpath("StopwordsList/stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(w.strip().lower() for w in text.split() if w.strip())
