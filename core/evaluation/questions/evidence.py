"""How a generated question relates to its evidence: the words it shares with it (the copy rule) and where a
quoted piece of evidence lies in the document, found loosely but stored exactly. The rule's thresholds are
measured; the package's docstring gives the figures."""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

COPY_THRESHOLD = 0.9  # measured: see the module docstring and scripts/question_overlap_study.py
COPY_RUN_SHARE = 0.7  # measured, likewise
COPY_RUN_WORDS = 4
MIN_QUOTE_WORDS = 3



_WORD = re.compile(r"[^\W_]+")
_stem_lock = threading.Lock()  # a PyStemmer object is not safe to share between threads


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """YAKE's English stop words (the list CHOP's extractor uses): it holds the question words, so "what" and
    "how" never count as copied."""
    from core.text import stopwords

    return stopwords()


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def content_words(text: str) -> set[str]:
    """Case-folded, Snowball-stemmed words of `text` without stop words: what "the same word" means for copying
    and duplicates, so "cleaning" in a question matches "clean" in its evidence."""
    stop = _stop_words()
    words = [w for w in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()) if w not in stop]
    if not words:
        return set()
    with _stem_lock:
        return set(_stemmer().stemWords(words))


def copy_overlap(question: str, evidence: str) -> float:
    """The share of the question's content words that appear in its evidence (0 for a question with none)."""
    q = content_words(question)
    return len(q & content_words(evidence)) / len(q) if q else 0.0


def _plain_words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def copied_run_share(question: str, evidence: str, run: int = COPY_RUN_WORDS) -> float:
    """The share of the question's words (all of them, stop words too) inside a run of `run` consecutive words that
    the evidence also holds in that order: what tells a sentence turned into a question from a question that
    merely uses the evidence's vocabulary, as most human questions do (0 for a question shorter than `run`)."""
    qw, ew = _plain_words(question), _plain_words(evidence)
    if len(qw) < run:
        return 0.0
    grams = {tuple(ew[i : i + run]) for i in range(len(ew) - run + 1)}
    covered = [False] * len(qw)
    for i in range(len(qw) - run + 1):
        if tuple(qw[i : i + run]) in grams:
            covered[i : i + run] = [True] * run
    return sum(covered) / len(qw)


def copies_evidence(question: str, evidence: str, threshold: float = COPY_THRESHOLD,
                    run_share: float = COPY_RUN_SHARE) -> bool:
    """A near-copy: more than `threshold` of its content words come from the evidence and at least `run_share` of
    its words lie in verbatim runs of it (both measured on human questions: module docstring)."""
    return copy_overlap(question, evidence) > threshold and copied_run_share(question, evidence) >= run_share


# --- locating a quote --------------------------------------------------------------------------------------------

_QUOTE_CHARS = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                              "\u00b4": "'", "`": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
                              "\u2033": '"', "\u00ab": '"', "\u00bb": '"'})


def loose_text(text: str) -> tuple[str, list[int]]:
    """`text` with curly quotes made straight and every whitespace run made one space, and for each character of
    the result the offset of the original character it came from: a match in the loose text maps back to exact
    offsets in the original."""
    out: list[str] = []
    where: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space:
                out.append(" ")
                where.append(i)
            in_space = True
            continue
        in_space = False
        out.append(ch.translate(_QUOTE_CHARS))
        where.append(i)
    return "".join(out), where


def _occurrences(haystack: str, needle: str, limit: int = 2) -> list[int]:
    """Start offsets of `needle` in `haystack`, overlapping ones too, at most `limit` (two tell "more than once")."""
    found: list[int] = []
    pos = haystack.find(needle)
    while pos >= 0 and len(found) < limit:
        found.append(pos)
        pos = haystack.find(needle, pos + 1)
    return found


class QuoteIndex:
    """A document's loose text, built once, to locate many quotes in it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.loose, self.where = loose_text(text)

    def locate(self, quote: str) -> tuple[int, int] | str:
        """The exact (start, end) of `quote` in the original text, or the reason it cannot be used."""
        needle = loose_text(quote.strip())[0]
        if len(needle.split()) < MIN_QUOTE_WORDS:
            return "quote too short"
        hits = _occurrences(self.loose, needle)
        if not hits:
            return "quote not found"
        if len(hits) > 1:
            return "quote found more than once"
        first, last = hits[0], hits[0] + len(needle) - 1
        return self.where[first], self.where[last] + 1


def locate_quote(text: str, quote: str) -> tuple[int, int] | str:
    """`QuoteIndex(text).locate(quote)` for one quote."""
    return QuoteIndex(text).locate(quote)
