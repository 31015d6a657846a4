"""A LangChain `Embeddings` around an already loaded sentence-transformers model.

LangChain's own HuggingFaceEmbeddings lives in another package and loads the model again by name; the benchmark
needs every semantic chunker to share one model object, so that the same weights, threads and batch size do
the work and only the chunking around them differs. Importing this module needs langchain-core.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings


class SharedModelEmbeddings(Embeddings):
    """`embed_documents` / `embed_query` through `model.encode`, with the batch size our embedder uses."""

    def __init__(self, model: Any, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return vecs.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
