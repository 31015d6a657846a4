"""Top-k retrieval over an indexed chunk run: embed the question, ask the store, map ids back to chunks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.chunkers.base import Chunk
from core.embeddings import Embedder
from core.index import VectorStore


@dataclass
class Hit:
    chunk: Chunk
    score: float
    rank: int


class Retriever:
    def __init__(self, store: VectorStore, collection: str, chunks: Sequence[Chunk], embedder: Embedder) -> None:
        self.store = store
        self.collection = collection
        self.by_id = {c.chunk_id: c for c in chunks}
        self.embedder = embedder

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        vectors = self.embedder.embed(list(queries))
        return [
            [Hit(self.by_id[cid], score, rank) for rank, (cid, score) in enumerate(found, start=1)]
            for found in self.store.query(self.collection, vectors, k)
        ]

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]
