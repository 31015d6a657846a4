"""A document: plain text plus where it came from, and where each source document sits inside a joined stream.
PDF page starts and outline entries are kept as character offsets into the text."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    """Where one source document lies inside a joined stream."""

    doc_id: str
    title: str
    start: int
    end: int
    cnm: dict[str, str] | None = None  # the source document's gold tags, when it has them
    page_starts: tuple[int, ...] = ()  # the source PDF's page starts, in its own offsets


@dataclass
class Document:
    doc_id: str
    title: str
    text: str
    source: str = ""
    page_starts: list[int] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # loaded, but the user should know (e.g. a guessed encoding)
    #: a PDF's outline (bookmarks) as [offset, level, title], each at the start of the page it points to
    outline: list[tuple[int, int, str]] = field(default_factory=list)
    #: gold tags {"category", "model"} of a QA set's document (a corpus.jsonl `cnm` object), to score CNM tags
    cnm: dict[str, str] | None = None
    #: what read the text (`core.ingest.pdf.LOADER` for a PDF): the page view trusts offsets from its own loader only
    loader: str = ""

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    @property
    def joins(self) -> list[int]:
        """Offsets where a new source document begins inside a stream (none for a single document)."""
        return [seg.start for seg in self.segments[1:]]

    def segment_at(self, offset: int) -> Segment | None:
        """The source document of a stream holding `offset` (None outside every segment, or for a single
        document)."""
        return next((s for s in self.segments if s.start <= offset < s.end), None)

    def page_at(self, offset: int) -> int | None:
        """1-based page number holding `offset`, for PDFs and for a stream's part that is a PDF."""
        starts: Sequence[int] = self.page_starts
        base = 0
        if not starts and (seg := self.segment_at(offset)) is not None:
            starts, base = seg.page_starts, seg.start
        if not starts:
            return None
        return bisect.bisect_right(starts, offset - base) or 1

    def pages_of(self, start: int, end: int) -> tuple[int, int] | None:
        """First and last 1-based page of the span [start, end), for PDFs."""
        first = self.page_at(start)
        return None if first is None else (first, self.page_at(max(start, end - 1)) or first)

    def page_label(self, start: int, end: int) -> str:
        """"p. 3" or "pp. 3–4" for the span, "" when the text has no pages."""
        pages = self.pages_of(start, end)
        if pages is None:
            return ""
        return f"p. {pages[0]}" if pages[0] == pages[1] else f"pp. {pages[0]}–{pages[1]}"


def documents_by_id(documents: Iterable[Document]) -> dict[str, Document]:
    """The documents keyed by their id (the last one wins, as a dict built from them would)."""
    return {d.doc_id: d for d in documents}
