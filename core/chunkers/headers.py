"""Contextual chunk headers: a metadata prefix of the document title and the chunk's heading path, no LLM.

Any chunker but `chop` takes `prefix=title|headings` (default `none`). The prefix is stored beside the span and
embedded and BM25-indexed with it, exactly like CHOP's CNM prefix, so the tables can show how much of CHOP's
gain a plain metadata prefix already gives, and how much the CNM and the continuity decisions add.

- title: the document's title (an upload's file name). Left out inside a joined stream, whose boundaries are
  what CHOP has to find.
- headings: the title, then the headings in force where the chunk starts: Markdown ATX headings (`#` to
  `######`, outside fenced code) and a PDF's outline (bookmarks), each at the offset of the page it points to.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Literal, get_args

from core.schema.documents import Document

#: the values of a chunker's `prefix` parameter (`core.chunkers.base.MetadataPrefix`)
PrefixMode = Literal["none", "title", "headings"]
PREFIX_MODES: tuple[PrefixMode, ...] = get_args(PrefixMode)
SEPARATOR = " > "
#: the longest line read as a heading, in characters. The longest heading of the QA sets and the sample data is
#: 109 characters (136 in this project's docs); a longer `#` line is prose or a hostile upload, and as a heading it
#: would be copied into the prefix of every chunk under it and read as a title by CHOP
MAX_HEADING_CHARS = 500
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def atx_heading(line: str) -> tuple[int, str] | None:
    r"""(level, text) of an ATX heading line (without its line break), or None. CommonMark's form: up to three
    spaces, one to six `#`, a blank, the text, then an optional closing run of `#` after a blank, and trailing
    blanks. The text is the shortest one after the opening blanks that leaves only such a tail, as the pattern
    `^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$` read it; read here in one pass over the line, because that
    pattern's lazy text before the blanks of its tail backtracked quadratically on a line followed by many blanks
    (seconds for 20,000). A line over MAX_HEADING_CHARS is no heading."""
    if len(line) > MAX_HEADING_CHARS:
        return None
    body = line.lstrip(" ")
    level = len(body) - len(body.lstrip("#"))
    rest = body[level:]
    text = rest.lstrip(" \t")
    if len(line) - len(body) > 3 or not 1 <= level <= 6 or len(text) == len(rest):
        return None
    if not text:  # only blanks after the `#`s: the text is the last of them, when there are two or more
        return (level, rest[-1]) if len(rest) > 1 else None
    end = len(text.rstrip(" \t"))
    hashes = len(text[:end].rstrip("#"))  # where a closing run of `#` starts
    if 0 < hashes < end and text[hashes - 1] in " \t":
        return level, text[:len(text[:hashes].rstrip(" \t"))]
    return level, text[:end]


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of every ATX heading line, in order; lines inside fenced code are skipped."""
    out: list[tuple[int, int, str]] = []
    fenced = False
    pos = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith(("#", " ")) and (found := atx_heading(line.rstrip("\r\n"))):
            out.append((pos, found[0], found[1].strip()))
        pos += len(line)
    return out


class HeadingPaths:
    """The heading path in force at any offset of one document."""

    def __init__(self, headings: Sequence[tuple[int, int, str]]) -> None:
        self._offsets = [h[0] for h in headings]
        self._paths: list[tuple[str, ...]] = []
        stack: list[tuple[int, str]] = []
        for _, level, title in headings:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            self._paths.append(tuple(t for _, t in stack))

    def at(self, offset: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._paths[i] if i >= 0 else ()


def document_headings(doc: Document) -> list[tuple[int, int, str]]:
    """A PDF's outline where it has one, else the Markdown headings of the text."""
    if doc.outline:
        return sorted((int(o), int(lv), str(t)) for o, lv, t in doc.outline)
    return markdown_headings(doc.text)


def header_texts(doc: Document, starts: Sequence[int], mode: str) -> list[str]:
    """The prefix for chunks starting at `starts` (empty strings for mode "none")."""
    if mode == "none":
        return [""] * len(starts)
    title = "" if doc.segments else doc.title.strip()
    if mode == "title":
        return [f"[{title}]" if title else ""] * len(starts)
    paths = HeadingPaths(document_headings(doc))
    out = []
    for start in starts:
        parts = list(paths.at(start))
        if title and (not parts or parts[0].casefold() != title.casefold()):
            parts.insert(0, title)
        out.append(f"[{SEPARATOR.join(parts)}]" if parts else "")
    return out
