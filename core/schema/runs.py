"""One chunker's run over a set of documents, in the two states the pipeline leaves it in:

    ChunkedRun  what was chunked: the chunks and traces one chunker made of the documents
                (`core.pipeline.chunk_documents`)
    IndexedRun  what was indexed: a ChunkedRun embedded into a Chroma collection, with its BM25 index beside it
                (`core.pipeline.index_run`)

and then scored: `core.evaluation.results.ChunkerReport`, what the bench, the app's Benchmark and the guided demo
write about an IndexedRun once every question was asked of it. The app's holder of a run on screen (a run, its
indexed run or the error that stopped it: `core.workbench.runs.ChunkerResult`) is the app's, not a noun.

A run carries the chunker that made it and its BM25 index, live objects of higher layers (`core.chunkers`,
`core.store`). Like the rest of `core.schema` this module imports nothing of `core` but the infrastructure and
the other nouns, so each is typed here by what the run and its readers ask of it (`RunChunker`, `TextIndex`,
`TextIndexes`); the real classes meet those protocols without naming them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.infra.jsonio import JsonObject
from core.schema.chunks import NOTES, Chunk, RetrievalPolicy, StoreValue
from core.schema.spans import Span


class RunChunker(Protocol):
    """The chunker that made a run (`core.chunkers.base.Chunker`, prepared on the run's documents), as what follows
    the run asks it: the fields the vector store keeps beside each chunk, and the tag-aware search the run's
    questions are tagged by (the one that tagged the chunks, with what it learned of the documents)."""

    def store_metadata(self, chunk: Chunk, /) -> dict[str, StoreValue]: ...

    def retrieval_policy(self, titles: Mapping[str, str] | None = None) -> RetrievalPolicy | None: ...


class TextIndex(Protocol):
    """A run's BM25 index (`core.store.lexical.LexicalIndex`): the ids of the units it ranks, in their order."""

    ids: list[str]


class TextIndexes(Protocol):
    """Where a run's BM25 index is held, loaded or built (`core.store.lexical.LexicalStore`)."""

    def for_collection(self, collection: str, units: Sequence[Chunk]) -> TextIndex: ...


@dataclass
class ChunkedRun:
    """What was chunked: one chunker's chunks over a set of documents, with its per-document traces. Cached on disk
    by the documents and the chunker's identity (`core.pipeline.run_key`); `index_run` makes an IndexedRun of it."""

    spec: str
    identity: str
    chunks: list[Chunk]
    traces: dict[str, JsonObject] = field(default_factory=dict)  # by doc_id: each document's `Chunking.trace`
    seconds: float = 0.0
    from_cache: bool = False
    #: the chunker that made the run (prepared on its documents), carried so that what follows (its store
    #: metadata, its retrieval policy) need not build it again from the spec; None for a run made by hand
    chunker: RunChunker | None = field(default=None, repr=False, compare=False)

    def parents(self) -> list[Chunk]:
        """The chunks retrieval returns and evaluation scores (all of them, unless the run has children)."""
        return [c for c in self.chunks if c.parent_id is None]

    def children(self) -> list[Chunk]:
        """Multi-granular children (indexed instead of their parents); empty for single-level chunkers."""
        return [c for c in self.chunks if c.parent_id is not None]

    def notes(self) -> list[str]:
        """The lines the chunker left for the user (`Chunking.trace["notes"]`), in document order, each once."""
        lines: list[str] = []
        for trace in self.traces.values():
            held = trace.get(NOTES)
            if isinstance(held, list):
                lines.extend(line for line in held if isinstance(line, str))
        return list(dict.fromkeys(lines))

    def index_units(self) -> list[Chunk]:
        """What is embedded and indexed: the children of a multi-granular run, else every chunk."""
        return self.children() or self.chunks

    def spans(self) -> list[Span]:
        return [c.span for c in self.parents()]


@dataclass
class IndexedRun:
    """What was indexed: a ChunkedRun embedded into the Chroma collection `collection` (or found there complete),
    with what that cost, and its BM25 index when a lexical store was given. What the bench scores
    (`core.evaluation.bench.score_run`) and the app searches."""

    run: ChunkedRun
    collection: str
    embed_seconds: float
    index_seconds: float
    reused: bool
    texts_embedded: int
    vectors_computed: int = 0  # of those, how many the embedder really computed (the rest came from its cache)
    lexical: TextIndex | None = None  # BM25 over the same texts, when a lexical store was given
    lexical_seconds: float = 0.0  # building (or loading) it
    lexical_built: bool = False  # False: it came from the workspace or from memory
    #: each document's text by id, what the chunks' offsets point into (a sentence reranker reads it)
    texts: dict[str, str] = field(default_factory=dict, repr=False)

    def lexical_from(self, store: TextIndexes) -> TextIndex:
        """The run's BM25 index, taken from `store` (held, loaded or built) the first time it is needed, as when
        a run indexed without one is later searched with hybrid retrieval; kept on the run after that."""
        if self.lexical is None:
            self.lexical = store.for_collection(self.collection, self.run.index_units())
        return self.lexical
