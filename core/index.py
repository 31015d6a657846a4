"""ChromaDB storage for chunk vectors.

Embedded `PersistentClient` in the workspace by default; `HttpClient` when a server address is set (a
`chroma run` server is the scale-out path). Vectors are always supplied by us (`embedding_function=None`),
so Chroma never tries to download its own model. One collection per (corpus, chunker config, embedder);
a collection marked complete with the expected count is reused instead of rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.chunkers.base import Chunk
from core.errors import ConfigError

QUERY_BATCH = 64


@dataclass(frozen=True)
class StoreSettings:
    """Where vectors live: `path` for the embedded client, or `host`/`port` of a Chroma server."""

    path: Path | None = None
    host: str | None = None
    port: int = 8000

    def describe(self) -> str:
        return f"chroma server {self.host}:{self.port}" if self.host else f"embedded chroma at {self.path}"


def make_client(settings: StoreSettings) -> Any:
    import chromadb
    from chromadb.config import Settings

    quiet = Settings(anonymized_telemetry=False)
    try:
        if settings.host:
            return chromadb.HttpClient(host=settings.host, port=settings.port, settings=quiet)
        if settings.path is None:
            raise ConfigError("an embedded Chroma store needs a folder")
        settings.path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(settings.path), settings=quiet)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - connection and file errors of many kinds
        raise ConfigError(f"cannot open {settings.describe()}: {exc}") from exc


def collection_name(corpus_fingerprint: str, chunker_spec: str, embedder_key: str) -> str:
    digest = hashlib.sha256(f"{corpus_fingerprint}|{chunker_spec}|{embedder_key}".encode()).hexdigest()
    return f"cl-{digest[:32]}"


def _metadata(chunk: Chunk) -> dict[str, Any]:
    meta: dict[str, Any] = {"doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end,
                            "token_count": chunk.token_count, "index": chunk.index}
    if chunk.parent_id:
        meta["parent_id"] = chunk.parent_id
    cnm = chunk.meta.get("cnm") or {}
    for field in ("category", "model"):
        if cnm.get(field):
            meta[f"cnm_{field}"] = cnm[field]
    return meta


class VectorStore:
    def __init__(self, settings: StoreSettings) -> None:
        self.settings = settings
        self.client = make_client(settings)

    def has_complete(self, name: str, expected: int) -> bool:
        try:
            col = self.client.get_collection(name)
        except Exception:  # noqa: BLE001 - NotFoundError differs between client kinds
            return False
        return bool((col.metadata or {}).get("complete")) and col.count() == expected

    def build(self, name: str, chunks: Sequence[Chunk], vectors: np.ndarray, description: dict[str, Any],
              progress: Callable[[int, int], None] | None = None) -> None:
        """(Re)create collection `name` holding `chunks` with their vectors; marked complete only at the end."""
        with contextlib.suppress(Exception):  # absent collection: the error type differs between client kinds
            self.client.delete_collection(name)
        col = self.client.create_collection(
            name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
            metadata={**description, "complete": False},
        )
        step = max(1, min(1000, int(self.client.get_max_batch_size())))
        for i in range(0, len(chunks), step):
            part = chunks[i : i + step]
            col.add(
                ids=[c.chunk_id for c in part],
                embeddings=vectors[i : i + len(part)],
                documents=[c.embed_text for c in part],
                metadatas=[_metadata(c) for c in part],
            )
            if progress:
                progress(min(i + step, len(chunks)), len(chunks))
        col.modify(metadata={**description, "complete": True})

    def query(self, name: str, vectors: np.ndarray, k: int,
              where: dict[str, Any] | None = None) -> list[list[tuple[str, float]]]:
        """Top-k (chunk id, cosine similarity) for each query vector, optionally only among chunks whose
        metadata matches `where` (Chroma's own filter)."""
        col = self.client.get_collection(name)
        k = min(k, col.count())
        if k <= 0:
            return [[] for _ in range(len(vectors))]
        out: list[list[tuple[str, float]]] = []
        for i in range(0, len(vectors), QUERY_BATCH):
            res = col.query(query_embeddings=vectors[i : i + QUERY_BATCH], n_results=k, include=["distances"],
                            where=where)
            for ids, dists in zip(res["ids"], res["distances"]):
                out.append([(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)])
        return out

    def delete(self, name: str) -> None:
        self.client.delete_collection(name)
