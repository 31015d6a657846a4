"""Changing the embedder (the default moving from fp32 to int8, or a user's setting) never mixes vectors: one
workspace keeps each embedder's vectors and collections apart, the new one computes its own, and the old one's
stay usable as they were."""

from __future__ import annotations

from core.ingest.documents import load_bytes
from core.services import build_services
from core.settings import Settings
from core.store.embeddings import BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8
from core.workbench import make_corpus, run_chunkers

TEXT = "\n\n".join(f"Section {i}. The Breeze {200 + i} fan clears filter error E{i} when its vents are cleaned "
                   f"with warm water every {i + 1} weeks." for i in range(12))


def run(workspace, embedder: str):
    services = build_services(Settings(workspace=str(workspace), embedder=embedder))
    corpus = make_corpus([load_bytes("breeze.txt", TEXT.encode())], None, join=False)
    result = run_chunkers(services, corpus, ["paragraph"])["paragraph"]
    assert result.ok, result.error
    return result.indexed


def test_each_embedder_keeps_its_own_vectors_and_collections_in_one_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")  # only this workspace's own caches count
    old = run(tmp_path, BUNDLED_MINILM_FP32)
    assert old.vectors_computed == old.texts_embedded > 0
    new = run(tmp_path, BUNDLED_MINILM_INT8)
    assert new.collection != old.collection  # another collection, never the fp32 vectors under int8 queries
    assert new.vectors_computed == new.texts_embedded == old.texts_embedded  # not one fp32 vector taken
    again = run(tmp_path, BUNDLED_MINILM_FP32)
    assert (again.collection, again.vectors_computed) == (old.collection, 0)  # the fp32 ones are still there
