"""The chunk model: what every layer of ChunkLens shares, and nothing else.

A chunk is always an exact span of its document: `doc.text[chunk.start:chunk.end] == chunk.text`. What a method
adds (CHOP's prefix, LGMGC's parent link, a chunker's diagnostics) lives beside the span, never inside it. A
retrieval policy is the interface a method's tag-aware search meets the retriever through.

Like the rest of `core.schema`, it imports nothing of `core` but errors and the other nouns, so the chunkers, the
store, the pipeline and the methods all build on it without reaching each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject
from core.schema.documents import Document, documents_by_id
from core.schema.spans import Span

#: what the vector store keeps beside a chunk, for a retrieval policy to filter on
StoreValue = str | int | float | bool


@dataclass
class Chunk:
    doc_id: str
    start: int
    end: int
    text: str
    token_count: int
    index: int = 0
    prefix: str = ""
    prefix_place: Literal["before", "after"] = "before"
    parent_id: str | None = None
    child: str = ""  # for a multi-granular child: its label inside the parent ("h0", "q3"); "" otherwise
    meta: JsonObject = field(default_factory=dict)  # what a method adds, JSON-safe: run caches and exports hold it

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}#{self.index}" + (f".{self.child}" if self.child else "")

    @property
    def embed_text(self) -> str:
        """What is embedded and stored: the span, with the prefix before or after it when there is one."""
        if not self.prefix:
            return self.text
        return f"{self.prefix}\n{self.text}" if self.prefix_place == "before" else f"{self.text}\n{self.prefix}"

    @property
    def span(self) -> Span:
        """The chunk as a character span of its document, as gold evidence is written."""
        return Span(self.doc_id, self.start, self.end)

    def to_dict(self) -> JsonObject:
        return dataclasses.asdict(self) | {"chunk_id": self.chunk_id}


class SpanMismatch(ChunkLensError):
    """A chunk whose text is not its document's slice (a chunker bug, or a cache that no longer fits)."""


def check_spans(chunks: Sequence[Chunk], docs: Sequence[Document]) -> None:
    """Hold every chunk to the contract: a known document, 0 <= start <= end <= len(text), and
    `text == doc.text[start:end]`. Raises SpanMismatch naming the first chunk that breaks it."""
    by_id = documents_by_id(docs)
    for c in chunks:
        doc = by_id.get(c.doc_id)
        if doc is None:
            raise SpanMismatch(f"chunk {c.chunk_id} names a document that is not there")
        if not 0 <= c.start <= c.end <= len(doc.text) or doc.text[c.start:c.end] != c.text:
            raise SpanMismatch(f"chunk {c.chunk_id} ({c.start}-{c.end}) is not its document's text there")


@dataclass
class Chunking:
    """A chunker's output for one document: the chunks plus a JSON-safe trace of how it decided (for the app)."""

    chunks: list[Chunk]
    trace: JsonObject = field(default_factory=dict)


#: the `Chunking.trace` key of the lines a run shows its user, one per thing the chunker did that its name does not
#: say (the `page` chunker keeping a document without pages whole). Kept in the trace, so a cached run says it again.
NOTES = "notes"


def add_note(trace: JsonObject, line: str) -> None:
    """Add one line for the run to show (`NOTES`) to a chunker's trace."""
    notes = trace.setdefault(NOTES, [])
    if not isinstance(notes, list):
        raise TypeError(f"a trace's {NOTES!r} is a list of lines, not {type(notes).__name__}")
    notes.append(line)


#: the most notes of one run shown (a QA set of 500 text files would give 500 alike); the rest are counted
SHOWN_NOTES = 5


def shown_notes(spec: str, lines: Sequence[str], limit: int = SHOWN_NOTES) -> list[str]:
    """The first `limit` of a run's notes, then one line counting the rest, each line naming the run's spec."""
    out = [f"{spec}: {line}" for line in lines[:limit]]
    if len(lines) > limit:
        out.append(f"{spec}: and {len(lines) - limit} more like these")
    return out



class RetrievalPolicy(Protocol):
    """A method's tag-aware search (see the module docstring). Tags are JSON-safe dicts; a chunk's filter value is
    what the store holds under `store_field` for it ("" when it has none)."""

    mode: str  # "filter" | "boost"
    boost: float
    pool: int  # candidates a boost re-ranks (at least)
    store_field: str
    label: str  # what the app calls the question's tags: "question CNM", "title routing"

    def tag_queries(self, queries: Sequence[str], values: Sequence[str] = ()) -> list[JsonObject]:
        """Each question's tags; `values` are the filter values the searched chunks carry."""
        ...

    def chunk_value(self, chunk: Chunk) -> str: ...

    def filter_values(self, tags: JsonObject, values: Sequence[str]) -> tuple[list[str], str]:
        """The chunk values a filter keeps for a question with these tags ([] = search unfiltered), and what was
        applied, for the app ("filter", "none (no model)", ...)."""
        ...

    def residual_query(self, query: str, tags: JsonObject) -> str:
        """What of the question the lexical side still searches for once the filter kept chunks for these tags."""
        ...

    def match(self, tags: JsonObject, chunk: Chunk) -> float: ...
