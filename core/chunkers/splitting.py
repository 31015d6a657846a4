"""Shared span arithmetic for chunkers: size measures, greedy packing, recursive splitting to a cap.

Sizes are measured on the real text of the span (tokens with tiktoken, or words), so a cap is a promise the
property tests can check, not an estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core import text as T
from core.schema.spans import Interval
from core.tokens import TokenMap, count_tokens, count_tokens_many, token_char_offsets, token_map

SizedInterval = tuple[int, int, int]  # start, end, measured size (an `Interval` of one text, with its size)
#: one level of the recursive splitter: text, start, end -> its parts, non-empty and stripped of whitespace
Splitter = Callable[[str, int, int], list[Interval]]


@dataclass(frozen=True)
class Measure:
    """How chunk size is counted: 'tokens' (tiktoken cl100k_base) or 'words' (see core.text)."""

    unit: str

    def size(self, text: str, start: int, end: int) -> int:
        if self.unit == "tokens":
            return count_tokens(text[start:end])
        return T.word_index(text).count(start, end)

    def sizes(self, text: str, spans: Sequence[Interval]) -> list[int]:
        """`size` of every span, in one batch (threads for tokens, one array lookup for words)."""
        if self.unit == "tokens":
            return count_tokens_many([text[s:e] for s, e in spans])
        return T.word_index(text).count_many(spans)


TOKENS = Measure("tokens")
WORDS = Measure("words")


def token_windows(text: str, start: int, end: int, size: int, overlap: int = 0) -> list[Interval]:
    """Fixed windows of `size` tokens advancing by `size - overlap`, as stripped character spans, each holding
    at most `size` tokens when re-tokenised on its own: the last resort of `split_to_cap` under a token cap."""
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    offsets = [start + o for o in token_char_offsets(text[start:end])]
    n = len(offsets) - 1
    spans: list[Interval] = []
    i = 0
    while i < n:
        j = min(i + size, n)
        s, e = T.strip_span(text, offsets[i], offsets[j])
        # re-tokenising a slice can, rarely, give one token more than the window held: shrink until it fits
        while e > s and count_tokens(text[s:e]) > size and j > i + 1:
            j -= 1
            s, e = T.strip_span(text, offsets[i], offsets[j])
        if e > s:
            spans.append((s, e))
        if j >= n:
            break
        i = max(j - overlap, i + 1)
    return spans


def document_token_windows(text: str, start: int, end: int, size: int, overlap: int = 0) -> list[tuple[int, int, int]]:
    """Naive-500T's windows: `size` tokens of the text's own tokenisation, advancing by `size - overlap`, as
    (start, end, tokens) with the span stripped of whitespace; windows of whitespace only are left out.

    The window is defined on the tokens of the whole text, as CHOP, LangChain and Chonkie define it, so it
    holds exactly `tokens` of them, whitespace that stripping took off its edges included; tiktoken run on the
    span alone may count fewer, or up to one more at each edge.
    One tokenizer pass, plus character offsets for the window edges only.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    tokens = token_map(text) if (start, end) == (0, len(text)) else TokenMap(text[start:end])
    n = tokens.count
    firsts = list(range(0, max(n - overlap, 1), size - overlap)) if n else []
    lasts = [min(i + size, n) for i in firsts]
    edges = tokens.char_offsets(firsts + lasts)
    out: list[tuple[int, int, int]] = []
    for i, j, cs, ce in zip(firsts, lasts, edges, edges[len(firsts) :]):
        s, e = T.strip_span(text, start + cs, start + ce)
        keep_window(out, (s, e, j - i))
    return out


def keep_window(out: list[tuple[int, int, int]], window: tuple[int, int, int]) -> None:
    """Append a window unless it is empty or inside the last one; drop the last one if it is inside this one.
    Distinct token windows can share an edge once snapped to characters (CJK characters span several tokens) or
    stripped of whitespace; this keeps the spans strictly increasing and the text covered."""
    s, e, _ = window
    if e <= s or (out and e <= out[-1][1]):
        return
    if out and s <= out[-1][0]:
        out.pop()
    out.append(window)


def pack(text: str, units: Sequence[Interval], measure: Measure, cap: int) -> list[Interval]:
    """Greedily merge consecutive units into spans whose measured size stays within `cap`.

    Units are added while the sum of their sizes fits; each finished span is then measured for real and, if
    joining changed the count, gives back units from its end. Units bigger than `cap` alone pass unchanged
    (split them first).
    """
    sized = [(s, e, n) for (s, e), n in zip(units, measure.sizes(text, units), strict=True)]
    return [(s, e) for s, e, _ in pack_sized(text, sized, measure, cap)]


def pack_sized(text: str, units: Sequence[SizedInterval], measure: Measure, cap: int) -> list[SizedInterval]:
    """`pack` of units whose sizes are known already; the packed spans come back with their measured sizes."""
    spans: list[SizedInterval] = []
    i = 0
    while i < len(units):
        j, total = i + 1, units[i][2]
        while j < len(units) and total + units[j][2] <= cap:
            total += units[j][2]
            j += 1
        size = units[i][2] if j - i == 1 else measure.size(text, units[i][0], units[j - 1][1])
        while j - i > 1 and size > cap:
            j -= 1
            size = units[i][2] if j - i == 1 else measure.size(text, units[i][0], units[j - 1][1])
        spans.append((units[i][0], units[j - 1][1], size))
        i = j
    return spans


def split_to_cap(text: str, start: int, end: int, measure: Measure, cap: int,
                 levels: Sequence[Splitter]) -> list[Interval]:
    """Recursive splitting: try each separator level in turn until every piece fits, then pack pieces back up.

    The last resort below every level is fixed token windows (tokens) or single words (words), so the cap holds
    for any input, including text without spaces or punctuation.
    """
    return [(s, e) for s, e, _ in split_sized(text, start, end, measure, cap, levels)]


def split_sized(text: str, start: int, end: int, measure: Measure, cap: int, levels: Sequence[Splitter],
                size: int | None = None) -> list[SizedInterval]:
    """`split_to_cap` with each span's measured size; `size`, when given, is the size of text[start:end].

    Every piece is measured once: the parts of a level in one batch, and a packed span once more only when it
    joins several pieces (the splitter used to measure each piece again at every level above it).
    """
    stripped = T.strip_span(text, start, end)
    if stripped != (start, end):
        start, end, size = stripped[0], stripped[1], None
    if end <= start:
        return []
    if size is None:
        size = measure.size(text, start, end)
    if size <= cap:
        return [(start, end, size)]
    for depth, level in enumerate(levels):
        parts = level(text, start, end)
        if len(parts) > 1:
            pieces: list[SizedInterval] = []
            for (ps, pe), n in zip(parts, measure.sizes(text, parts), strict=True):
                if n <= cap:  # parts come stripped (see Splitter): one that fits is a piece as it is
                    pieces.append((ps, pe, n))
                else:
                    pieces.extend(split_sized(text, ps, pe, measure, cap, levels[depth + 1 :], n))
            return pack_sized(text, pieces, measure, cap)
    if measure.unit == "tokens":
        return [(s, e, count_tokens(text[s:e])) for s, e in token_windows(text, start, end, cap)]
    words = T.words(text, start, end)
    return pack_sized(text, [(s, e, n) for (s, e), n in zip(words, measure.sizes(text, words), strict=True)],
                      measure, cap)


STRUCTURE_LEVELS: tuple[Splitter, ...] = (T.paragraphs, T.lines, T.separator_sentences, T.words)
