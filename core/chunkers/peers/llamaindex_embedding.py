"""LlamaIndex's embedding interface over the run's embedder (the bundled MiniLM by default), for
`llamaindex-semantic`: the library is handed the model the run already holds, so nothing is loaded by name and
nothing is fetched. Importing this module imports llama-index-core; `core.chunkers.peers.llamaindex` imports it when
a document is first chunked."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import PrivateAttr

from core.chunkers.similarity import unit_vectors

#: the most texts handed to the embedder at once (LlamaIndex's ceiling); the embedder batches them itself
_BATCH = 2048


class ChunkLensEmbedding(BaseEmbedding):
    """Unit vectors from the run's embedder (`embed`, which stops between batches once the run is stopped)."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any) -> None:
        super().__init__(model_name=embedder.describe(), embed_batch_size=_BATCH)
        self._embedder = embedder

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return unit_vectors(self._embedder, list(texts)).tolist()

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embedding(query)
