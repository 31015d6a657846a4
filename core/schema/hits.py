"""What a search returns: a hit (a chunk, its score and rank, and where it stood on each side of the search), a
question's tags and what the retrieval policy did with them, and one question's answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.infra.jsonio import JsonObject
from core.schema.chunks import Chunk
from core.schema.spans import Span


@dataclass
class Hit:
    chunk: Chunk
    score: float
    rank: int
    similarity: float = 0.0  # the plain cosine similarity (0 when the dense side did not rank it), before a boost
    tag_match: float | None = None  # the retrieval policy's match of the question with this chunk
    children: list[tuple[Chunk, float]] = field(default_factory=list)  # multi-granular: the child hits behind it
    unit_id: str = ""  # the indexed unit behind the score: the chunk itself, or a parent's best child
    dense_rank: int | None = None  # 1-based, among the searched chunks; None: beyond the candidate pool
    dense_score: float | None = None  # cosine similarity
    lexical_rank: int | None = None  # 1-based; None: no query token occurs in the chunk
    lexical_score: float | None = None  # BM25
    first_rank: int | None = None  # with a reranker: the rank before it re-ordered the hits
    rerank_score: float | None = None  # with a reranker: its score

    @property
    def span(self) -> Span:
        """The hit's chunk as a character span of its document, as gold evidence is written."""
        return self.chunk.span


@dataclass
class QueryTags:
    """A question's tags and what the retrieval policy did with them."""

    tags: JsonObject  # the policy's own, JSON-safe (`RetrievalPolicy.tag_queries`)
    applied: str = "none"  # "filter", "boost", "route", "none (no model)", "none (no title named)", ...
    values: list[str] = field(default_factory=list)  # the chunk values a filter kept
    label: str = "question CNM"  # the policy's name for them (`RetrievalPolicy.label`)


@dataclass
class Answer:
    """One question's hits, with its tags when the run has a retrieval policy."""

    hits: list[Hit]
    tags: QueryTags | None = None
