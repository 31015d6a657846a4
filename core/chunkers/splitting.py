"""Shared span arithmetic for chunkers: size measures, greedy packing, recursive splitting to a cap.

Sizes are measured on the real text of the span (tokens with tiktoken, or words), so a cap is a promise the
property tests can check, not an estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core import text as T
from core.tokens import TokenMap, count_tokens, token_char_offsets

Span = tuple[int, int]
Splitter = Callable[[str, int, int], list[Span]]


@dataclass(frozen=True)
class Measure:
    """How chunk size is counted: 'tokens' (tiktoken cl100k_base) or 'words' (see core.text)."""

    unit: str

    def size(self, text: str, start: int, end: int) -> int:
        if self.unit == "tokens":
            return count_tokens(text[start:end])
        return T.word_index(text).count(start, end)


TOKENS = Measure("tokens")
WORDS = Measure("words")


def token_windows(text: str, start: int, end: int, size: int, overlap: int = 0) -> list[Span]:
    """Fixed windows of `size` tokens advancing by `size - overlap`, as stripped character spans, each holding
    at most `size` tokens when re-tokenised on its own: the last resort of `split_to_cap` under a token cap."""
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    offsets = [start + o for o in token_char_offsets(text[start:end])]
    n = len(offsets) - 1
    spans: list[Span] = []
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
    tokens = TokenMap(text[start:end])
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


def pack(text: str, units: Sequence[Span], measure: Measure, cap: int) -> list[Span]:
    """Greedily merge consecutive units into spans whose measured size stays within `cap`.

    Units are added while the sum of their sizes fits; each finished span is then measured for real and, if
    joining changed the count, gives back units from its end. Units bigger than `cap` alone pass unchanged
    (split them first).
    """
    sizes = [measure.size(text, s, e) for s, e in units]
    spans: list[Span] = []
    i = 0
    while i < len(units):
        j, total = i + 1, sizes[i]
        while j < len(units) and total + sizes[j] <= cap:
            total += sizes[j]
            j += 1
        while j - i > 1 and measure.size(text, units[i][0], units[j - 1][1]) > cap:
            j -= 1
        spans.append((units[i][0], units[j - 1][1]))
        i = j
    return spans


def split_to_cap(text: str, start: int, end: int, measure: Measure, cap: int, levels: Sequence[Splitter]) -> list[Span]:
    """Recursive splitting: try each separator level in turn until every piece fits, then pack pieces back up.

    The last resort below every level is fixed token windows (tokens) or single words (words), so the cap holds
    for any input, including text without spaces or punctuation.
    """
    start, end = T.strip_span(text, start, end)
    if end <= start:
        return []
    if measure.size(text, start, end) <= cap:
        return [(start, end)]
    for depth, level in enumerate(levels):
        parts = level(text, start, end)
        if len(parts) > 1:
            pieces: list[Span] = []
            for ps, pe in parts:
                pieces.extend(split_to_cap(text, ps, pe, measure, cap, levels[depth + 1 :]))
            return pack(text, pieces, measure, cap)
    if measure.unit == "tokens":
        return token_windows(text, start, end, cap)
    return pack(text, T.words(text, start, end), measure, cap)


STRUCTURE_LEVELS: tuple[Splitter, ...] = (T.paragraphs, T.lines, T.separator_sentences, T.words)
