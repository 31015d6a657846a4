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

from core.schema.documents import Document

PREFIX_MODES = ("none", "title", "headings")
SEPARATOR = " > "
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of every ATX heading line, in order; lines inside fenced code are skipped."""
    out: list[tuple[int, int, str]] = []
    fenced = False
    pos = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith(("#", " ")) and (m := _ATX.match(line.rstrip("\r\n"))):
            out.append((pos, len(m.group(1)), m.group(2).strip()))
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
