"""The machine's shared sample vectors (`python -m core warm`): a new workspace copies what the file holds instead
of computing it, computes the rest, and never depends on the file being there, readable or switched on."""

from __future__ import annotations

import numpy as np
import pytest

import core.store.embedders as embedders
import core.workbench as workbench
import core.workbench.demo as demo
from core.__main__ import main
from core.store.embeddings import CachedEmbedder, EmbeddingCache
from core.store.machine_file import MachineVectors


class _Recorder:
    """Stands in for a cached embedder's model, writing down each text the cache had to compute."""

    def __init__(self, inner):
        self.inner, self.texts = inner, {}

    def embed(self, texts, progress=None):
        self.texts.update(dict.fromkeys(texts))
        return self.inner.embed(texts, progress)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture()
def machine_file(tmp_path, monkeypatch):
    """Point the machine's vector file at tmp_path, as if CHUNKLENS_MODEL_CACHE named it."""
    path = tmp_path / "machine" / "sample-vectors.sqlite"
    monkeypatch.setattr(embedders, "machine_vectors_path", lambda key: path)
    monkeypatch.delenv(embedders.MACHINE_VECTORS_ENV, raising=False)
    return path


def test_a_new_cache_copies_what_the_machine_holds_and_computes_the_rest(minilm, tmp_path, machine_file):
    first = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "warm.sqlite"))
    alpha, beta = first.embed(["alpha", "beta"])
    assert embedders.publish_machine_vectors(tmp_path / "warm.sqlite", minilm) == machine_file

    machine = embedders.machine_vectors(minilm)
    fresh = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "ws.sqlite"), machine=machine)
    got = fresh.embed(["beta", "gamma", "alpha"])
    assert (fresh.stats.computed, fresh.stats.copied) == (1, 2)
    assert np.array_equal(got[0], beta) and np.array_equal(got[2], alpha)
    # the copies are the workspace's own now: without the machine's file nothing is computed again
    alone = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "ws.sqlite"))
    alone.embed(["alpha", "beta", "gamma"])
    assert alone.stats.computed == 0


def test_a_missing_damaged_or_switched_off_machine_file_is_only_a_lost_head_start(minilm, tmp_path, machine_file,
                                                                                    monkeypatch):
    assert embedders.machine_vectors(minilm) is None  # not built yet
    machine_file.parent.mkdir(parents=True)
    machine_file.write_bytes(b"not a database" * 100)
    damaged = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "a.sqlite"), machine=MachineVectors(machine_file))
    assert damaged.embed(["alpha"]).shape == (1, 384) and damaged.stats.computed == 1
    monkeypatch.setenv(embedders.MACHINE_VECTORS_ENV, "off")
    assert embedders.machine_vectors(minilm) is None


@pytest.mark.slow
def test_warm_then_a_fresh_workspace_runs_the_demo_without_embedding(tmp_path, machine_file, monkeypatch):
    """`python -m core warm` on a smaller set of chunkers (the command is the same for the eight defaults): a new
    workspace's guided demo then copies every vector it needs and computes none."""
    from core.services import build_services
    from core.settings import Settings

    monkeypatch.setattr(demo, "DEFAULT_SPECS", ["paragraph"])  # what the demo and the warm-up run
    assert main(["warm"]) == 0 and machine_file.is_file()
    services = build_services(Settings(workspace=str(tmp_path / "visitor")))
    assert services.embedder.machine is not None, "the new workspace did not open the machine's file"
    computed = _Recorder(services.embedder.inner)
    services.embedder.inner = computed
    summary = workbench.guided_demo(services, services.settings.retrieval_settings())
    assert summary.results["paragraph"].ok, summary.results["paragraph"].error
    # on a failure, the texts the warm run did not leave in the file say which stage embedded differently
    assert not computed.texts, f"{len(computed.texts)} texts embedded, first: {list(computed.texts)[:3]}"
    assert services.embedder.stats.computed == 0 and services.embedder.stats.copied > 0
    assert main(["warm"]) == 0  # a second warm finds the file and leaves it
