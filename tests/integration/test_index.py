"""ChromaDB: the embedded client and a real `chroma run` server give the same answers; reuse works."""

from __future__ import annotations

import numpy as np
import pytest

from core.chunkers.registry import make_chunker
from core.pipeline import chunk_documents, index_run
from core.schema.documents import Document
from core.store.index import StoreSettings, VectorStore
from core.store.retrieval import Retriever
from tests.support.chroma_server import chroma_server

DOCS = [
    Document("ac", "Air conditioner", "Clean the air filter every two weeks. Rinse it in lukewarm water.\n\n"
             "Error E4 means the indoor temperature sensor failed. Call service.\n\n"
             "The remote control uses two AAA batteries. Replace them yearly."),
    Document("cam", "Camera", "Charge the camera battery for three hours before first use.\n\n"
             "Press the shutter halfway to focus, then fully to take the picture.\n\n"
             "Clean the lens with a soft dry cloth only."),
]
QUERIES = ["how often should I clean the filter", "what does E4 mean", "how long to charge the battery",
           "how do I focus", "which batteries does the remote take"]


def _answers(store, embedder):
    run = chunk_documents(DOCS, make_chunker("sentence:max_tokens=20"))
    indexed = index_run(run, DOCS, embedder, store)
    hits = Retriever(store, indexed.collection, run.chunks, embedder).search_many(QUERIES, 3)
    return indexed, [[(h.chunk.chunk_id, round(h.score, 4)) for h in found] for found in hits]


@pytest.mark.slow
def test_embedded_and_server_give_the_same_results(tmp_path, cached_minilm):
    _, embedded = _answers(VectorStore(StoreSettings(path=tmp_path / "embedded")), cached_minilm)
    with chroma_server(tmp_path / "server-data") as port:
        _, served = _answers(VectorStore(StoreSettings(host="127.0.0.1", port=port)), cached_minilm)
    assert embedded == served
    assert embedded[0][0][0].startswith("ac#") and embedded[2][0][0].startswith("cam#")


def test_reindexing_the_same_inputs_reuses_the_collection(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    first, answers1 = _answers(store, cached_minilm)
    # a new client on the same folder, as after a restart
    second, answers2 = _answers(VectorStore(StoreSettings(path=tmp_path / "db")), cached_minilm)
    assert not first.reused and first.texts_embedded > 0
    assert second.reused and second.texts_embedded == 0
    assert first.collection == second.collection and answers1 == answers2


def test_incomplete_collection_is_rebuilt(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    first, _ = _answers(store, cached_minilm)
    store.client.get_collection(first.collection).modify(metadata={"complete": False})
    again, _ = _answers(store, cached_minilm)
    assert not again.reused


def test_unreachable_server_is_a_clear_error():
    from core.infra.errors import StoreError

    with pytest.raises(StoreError, match="cannot open chroma server"):
        VectorStore(StoreSettings(host="127.0.0.1", port=9))


def test_a_rebuilt_index_returns_the_exact_neighbours(tmp_path):
    """Chroma's HNSW graph differs between two builds of the same vectors; with the store's candidate list
    (`SEARCH_EF`) longer than the collection, every build returns the exact top k (brute force over the vectors),
    so a rebuilt index answers as before. Clustered vectors, like chunks of near-duplicate manuals, are where
    Chroma's default list (100) lost neighbours: here 5 of 80 top-30 lists differed from the exact ones."""
    from core.schema.chunks import Chunk
    from core.store.index import SEARCH_EF

    rng = np.random.default_rng(0)
    n = SEARCH_EF - 12
    centres = rng.normal(size=(8, 384))
    vectors = centres[rng.integers(0, 8, n)] + rng.normal(size=(n, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    queries = vectors[rng.integers(0, n, 40)] + 0.3 * rng.normal(size=(40, 384)).astype(np.float32)
    chunks = [Chunk(doc_id="d", start=i, end=i + 1, text=f"t{i}", token_count=1, index=i) for i in range(n)]
    exact = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :30]
    for build in ("one", "two"):
        store = VectorStore(StoreSettings(path=tmp_path / build))
        store.build("clustered", chunks, vectors, {"about": "test"})
        found = store.query("clustered", queries, 30)
        assert [[int(cid.split("#")[1]) for cid, _ in row] for row in found] == exact.tolist()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Chroma's, on reading a collection's settings
def test_an_index_built_with_chromas_default_list_is_searched_with_the_longer_one(tmp_path, cached_minilm):
    """A workspace's collections built before the store asked for `SEARCH_EF` candidates answer like new ones."""
    from core.store.index import SEARCH_EF

    indexed, _ = _answers(VectorStore(StoreSettings(path=tmp_path / "db")), cached_minilm)
    client = VectorStore(StoreSettings(path=tmp_path / "db")).client
    client.get_collection(indexed.collection).modify(configuration={"hnsw": {"ef_search": 100}})
    _answers(VectorStore(StoreSettings(path=tmp_path / "db")), cached_minilm)
    assert client.get_collection(indexed.collection).configuration["hnsw"]["ef_search"] == SEARCH_EF
