"""ChromaDB storage for chunk vectors.

Embedded `PersistentClient` in the workspace by default; `HttpClient` when a server address is set (a
`chroma run` server is the scale-out path). Vectors are always supplied by us (`embedding_function=None`),
so Chroma never tries to download its own model. One collection per (corpus, chunker config, embedder);
a collection marked complete with the expected count is reused instead of rebuilt.

Faults: a build writes in batches and marks the collection complete only after the last one, so a build cut
short (server killed or restarted, app killed) leaves a collection `has_complete` refuses, and the next run
builds it again from cached vectors. Every failure of the store in use becomes one `StoreError` line naming
the store and what to do, never a raw client traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.infra.errors import ChunkLensError, ConfigError, StoreError
from core.infra.urls import redact_url
from core.schema.chunks import Chunk, StoreValue

if TYPE_CHECKING:
    from chromadb.api.types import Where
    from chromadb.base_types import LiteralValue

QUERY_BATCH = 64
#: candidates HNSW keeps while it searches (Chroma's default: 100). The graph Chroma builds differs from one build
#: to the next, so with a short list two builds of the same chunks can return different neighbours near the
#: cut-off (3 rerank sentences of 448 guided-demo searches, on one build in three); a list longer than a
#: workspace's collections usually are makes the search exhaustive there, so a rebuilt index answers as before.
SEARCH_EF = 512


@dataclass(frozen=True)
class StoreSettings:
    """Where vectors live: `path` for the embedded client, or `host`/`port` of a Chroma server."""

    path: Path | None = None
    host: str | None = None
    port: int = 8000

    def describe(self) -> str:
        """Where the vectors live, as reports and error lines show it: a server without any user name and password
        in its address (`core.infra.urls.redact_url`)."""
        return f"chroma server {redact_url(self.host)}:{self.port}" if self.host else f"embedded chroma at {self.path}"

    def advice(self) -> str:
        if self.host:
            return (f"check that the server runs (chroma run --port {self.port}) or clear the Chroma server "
                    "setting to use the embedded store")
        return "check that the workspace folder is writable and the disk is not full"


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
        # a store that is down or unwritable is not a wrong setting: StoreError, like a failure while in use
        raise StoreError(f"cannot open {settings.describe()} ({_first_line(exc)}); {settings.advice()}") from exc


def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else exc.__class__.__name__)[:limit]


def _unreachable(exc: BaseException) -> bool:
    """A transport failure (refused, reset, timed out), as opposed to an answer such as "no such collection"."""
    import httpx

    return isinstance(exc, httpx.TransportError | OSError)


def collection_name(corpus_fingerprint: str, chunker_spec: str, embedder_key: str) -> str:
    """The collection of one chunk run's vectors. `corpus_fingerprint` names the documents as chunked
    (`core.pipeline.corpus_fingerprint`: their texts and every field a chunker or the index reads, titles and
    outlines among them), so a library never searches a collection built from another library's tags of the same
    text; `chunker_spec` the chunker's identity, `embedder_key` the embedder."""
    digest = hashlib.sha256(f"{corpus_fingerprint}|{chunker_spec}|{embedder_key}".encode()).hexdigest()
    return f"cl-{digest[:32]}"


def _metadata(chunk: Chunk, extra: Callable[[Chunk], Mapping[str, StoreValue]] | None) -> dict[str, StoreValue]:
    """What Chroma keeps beside a chunk: its span's own fields, then the chunker's `store_metadata`."""
    meta: dict[str, StoreValue] = {"doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end,
                                   "token_count": chunk.token_count, "index": chunk.index}
    if chunk.parent_id:
        meta["parent_id"] = chunk.parent_id
    if extra is not None:
        meta.update(extra(chunk))  # the chunker's `store_metadata`
    return meta


def one_of(field: str, values: Sequence[StoreValue]) -> Where:
    """Chroma's filter (`where`) that keeps the chunks whose metadata `field` is one of `values`."""
    kept: list[LiteralValue] = list(values)
    inside: dict[Literal["$in", "$nin"], list[LiteralValue]] = {"$in": kept}
    return {field: inside}


class VectorStore:
    """Chunk vectors in Chroma. `batch_size` caps one write (the client's own limit caps it further)."""

    def __init__(self, settings: StoreSettings, batch_size: int = 1000) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.client = make_client(settings)
        #: name -> (collection handle, vector count) for `query`; see `_opened`
        self._open: dict[str, tuple[Any, int]] = {}

    @contextlib.contextmanager
    def _guard(self, action: str, then: str = "then rerun") -> Iterator[None]:
        """Any failure of the store while `action` becomes one StoreError line."""
        try:
            yield
        except ChunkLensError:
            raise
        except Exception as exc:  # noqa: BLE001 - chromadb and httpx raise many kinds
            raise self._error(action, exc, then) from exc

    def _error(self, action: str, exc: BaseException, then: str = "then rerun") -> StoreError:
        return StoreError(f"{self.settings.describe()} failed while {action} ({_first_line(exc)}); "
                          f"{self.settings.advice()}, {then}")

    def has_complete(self, name: str, expected: int) -> bool:
        """True only for a collection whose build finished (the flag is set last) with `expected` vectors."""
        try:
            col = self.client.get_collection(name)
        except Exception as exc:  # noqa: BLE001 - NotFoundError differs between client kinds
            if _unreachable(exc):
                raise self._error("looking for an index", exc) from exc
            return False
        with self._guard("looking for an index"):
            return bool((col.metadata or {}).get("complete")) and col.count() == expected

    def exists(self, name: str) -> bool:
        with self._guard("listing the indexes"):
            return name in {getattr(c, "name", c) for c in self.client.list_collections()}

    def build(self, name: str, chunks: Sequence[Chunk], vectors: np.ndarray, description: Mapping[str, StoreValue],
              progress: Callable[[int, int], None] | None = None,
              metadata: Callable[[Chunk], Mapping[str, StoreValue]] | None = None) -> None:
        """(Re)create collection `name` holding `chunks` with their vectors (and `metadata(chunk)` beside the
        span's own fields), the collection described by `description` (what it was built from); marked complete
        only at the end, so an interrupted build is never mistaken for a finished one."""
        then = "then rerun: the vectors are cached, only the index is written again"
        self._open.pop(name, None)
        with self._guard(f"building index {name}", then):
            if self.exists(name):  # a build that did not finish, or one of different inputs
                self.client.delete_collection(name)
            col = self.client.create_collection(
                name, embedding_function=None, configuration={"hnsw": {"space": "cosine", "ef_search": SEARCH_EF}},
                metadata={**description, "complete": False},
            )
            step = max(1, min(self.batch_size, int(self.client.get_max_batch_size())))
            for i in range(0, len(chunks), step):
                part = chunks[i : i + step]
                col.add(
                    ids=[c.chunk_id for c in part],
                    embeddings=vectors[i : i + len(part)],
                    documents=[c.embed_text for c in part],
                    metadatas=[_metadata(c, metadata) for c in part],
                )
                if progress:
                    progress(min(i + step, len(chunks)), len(chunks))
            col.modify(metadata={**description, "complete": True})

    def _opened(self, name: str) -> tuple[Any, int]:
        """The collection's handle and count, fetched once rather than on every query (two round trips to the
        store each time). A handle goes stale only when the collection is deleted or rebuilt; this store forgets
        its own on `build` and `delete`, and `query` fetches afresh when another client has done either."""
        if name not in self._open:
            col = self.client.get_collection(name)
            with warnings.catch_warnings():  # Chroma warns on reading the settings of a collection without an
                warnings.simplefilter("ignore", DeprecationWarning)  # embedding function, as ours are
                hnsw = (col.configuration or {}).get("hnsw") or {}
            if hnsw.get("ef_search", SEARCH_EF) < SEARCH_EF:  # built before the longer list: searched with it too
                col.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
            self._open[name] = (col, col.count())
        return self._open[name]

    def query(self, name: str, vectors: np.ndarray, k: int,
              where: Where | None = None) -> list[list[tuple[str, float]]]:
        """Top-k (chunk id, cosine similarity) for each query vector, optionally only among chunks whose
        metadata matches `where` (Chroma's own filter)."""
        with self._guard("searching", "then run the chunkers again if the index was lost"):
            held = name in self._open
            try:
                return self._query(name, vectors, k, where)
            except Exception as exc:  # noqa: BLE001 - a stale handle: NotFoundError differs between client kinds
                if not held or _unreachable(exc):
                    raise
                self._open.pop(name, None)
                return self._query(name, vectors, k, where)

    def _query(self, name: str, vectors: np.ndarray, k: int,
               where: Where | None) -> list[list[tuple[str, float]]]:
        col, count = self._opened(name)
        k = min(k, count)
        if k <= 0:
            return [[] for _ in range(len(vectors))]
        out: list[list[tuple[str, float]]] = []
        for i in range(0, len(vectors), QUERY_BATCH):
            res = col.query(query_embeddings=vectors[i : i + QUERY_BATCH], n_results=k, include=["distances"],
                            where=where)
            for ids, dists in zip(res["ids"], res["distances"]):
                out.append([(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)])
        return out

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `ids` (to give a lexical hit its exact cosine score)."""
        if not ids:
            return {}
        with self._guard("reading vectors", "then run the chunkers again if the index was lost"):
            col, _ = self._opened(name)
            got = col.get(ids=list(ids), include=["embeddings"])
            return {cid: np.asarray(v, dtype=np.float32) for cid, v in zip(got["ids"], got["embeddings"])}

    def delete(self, name: str) -> None:
        self._open.pop(name, None)
        with self._guard(f"deleting index {name}"):
            self.client.delete_collection(name)
