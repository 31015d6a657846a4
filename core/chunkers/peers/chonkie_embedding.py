"""Chonkie's embedding interface over the run's embedder (the bundled MiniLM by default), for `chonkie-semantic`:
Chonkie is handed the model the run already holds instead of its default model2vec model, which it would download.
Its tokenizer is Chonkie's character tokenizer (nothing to load; see `core.chunkers.peers.chonkie`). Importing this
module imports chonkie; `core.chunkers.peers.chonkie` imports it when a document is first chunked."""

from __future__ import annotations

from typing import Any

import numpy as np
from chonkie.embeddings import BaseEmbeddings
from chonkie.tokenizer import CharacterTokenizer

from core.chunkers.similarity import unit_vectors


class ChunkLensEmbeddings(BaseEmbeddings):
    """Unit vectors from the run's embedder (`embed`, which stops between batches once the run is stopped)."""

    def __init__(self, embedder: Any) -> None:
        super().__init__()
        self._embedder = embedder
        self._dimension: int | None = None

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        vectors = unit_vectors(self._embedder, list(texts))
        if len(vectors):
            self._dimension = vectors.shape[1]
        return list(vectors)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed("dimension"))
        return self._dimension

    def get_tokenizer(self) -> CharacterTokenizer:
        return CharacterTokenizer()

    def __repr__(self) -> str:
        return f"ChunkLensEmbeddings({self._embedder.describe()})"
