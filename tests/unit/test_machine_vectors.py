"""The machine's shared sample vectors (`python -m core warm`): a new workspace copies what the file holds instead
of computing it, computes the rest, and never depends on the file being there, readable or switched on."""

from __future__ import annotations

import logging
import re
import sqlite3

import numpy as np
import pytest

import core.store.embedders as embedders
import core.workbench as workbench
import core.workbench.demo as demo
from core.__main__ import main
from core.store.embeddings import CachedEmbedder, EmbeddingCache
from core.store.machine_file import MachineVectors, file_problem


class _Recorder:
    """Stands in for a cached embedder's model, writing down each text the cache had to compute."""

    def __init__(self, inner):
        self.inner, self.texts = inner, {}

    def embed(self, texts, progress=None):
        self.texts.update(dict.fromkeys(texts))
        return self.inner.embed(texts, progress)

    def __getattr__(self, name):
        return getattr(self.inner, name)


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


#: the chunkers of the damaged-file demos: cosine reads every sentence's vector (NaN rows once gave it hit@1 1.00
#: where the truth is 0.11), paragraph its chunks'
DEMO_SPECS = ["paragraph", "cosine"]
#: what a run's figures hold that says how it ran, not what it found
HOW_IT_RAN = ("seconds", "cached", "scores_cached", "vectors_computed")


def _demo(workspace, specs, monkeypatch, rerank: str = "maxsim"):
    """The guided demo on `specs` in `workspace`: its services, and each chunker's chunks and figures. `rerank`
    "none" leaves out the reranker, whose sentences a run that computes everything would embed for half a minute."""
    import dataclasses

    from core.services import build_services
    from core.settings import Settings

    monkeypatch.setattr(demo, "DEFAULT_SPECS", specs)
    services = build_services(Settings(workspace=str(workspace)))
    retrieval = dataclasses.replace(services.settings.retrieval_settings(), rerank=rerank)
    summary = workbench.guided_demo(services, retrieval)
    assert all(r.ok for r in summary.results.values()), {s: r.error for s, r in summary.results.items()}
    found = {spec: {"spans": [(c.doc_id, c.start, c.end) for c in r.run.chunks],
                    "figures": {k: v for k, v in summary.report["results"][spec].items() if k not in HOW_IT_RAN}}
             for spec, r in summary.results.items()}
    return services, found


@pytest.fixture(scope="module")
def honest(tmp_path_factory, sample_vectors):
    """The guided demo's chunks and figures for DEMO_SPECS, and for paragraph alone without the reranker, in
    workspaces that hold the sample set's vectors (the session's, computed once), with no machine file."""
    from tests.support.world import seed_workspace

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(embedders.MACHINE_VECTORS_ENV, "off")
        return {(tuple(specs), rerank): _demo(seed_workspace(tmp_path_factory.mktemp("honest"), sample_vectors),
                                              specs, mp, rerank)[1]
                for specs, rerank in ((DEMO_SPECS, "maxsim"), (["paragraph"], "none"))}


@pytest.fixture()
def published(sample_vectors, machine_file):
    """The session's sample-set vectors published as the machine's file, as `warm` publishes them; and the model."""
    model = embedders.local_embedder(embedders.BUNDLED_MINILM_FP32)
    embedders.publish_machine_vectors(sample_vectors, model)
    return machine_file, model


def _every_tenth_row(path, damage) -> int:
    """Damage every tenth row of the file with `damage` (a float32 row -> bytes); how many were damaged."""
    db = sqlite3.connect(str(path))
    rows = db.execute("SELECT key, vec FROM vectors WHERE rowid % 10 = 0").fetchall()
    db.executemany("UPDATE vectors SET vec = ? WHERE key = ?",
                   [(damage(np.frombuffer(v, dtype=np.float32).copy()), k) for k, v in rows])
    db.commit()
    db.close()
    return len(rows)


def _nan(v):
    v[5] = np.nan
    return v.tobytes()


def _inf(v):
    v[5] = -np.inf
    return v.tobytes()


ROW_DAMAGE = {"wrong length": lambda v: v[:-4].tobytes(), "NaN": _nan, "Inf": _inf,
              "not unit length": lambda v: (v * 0.5).tobytes()}


@pytest.mark.slow
@pytest.mark.parametrize("how", list(ROW_DAMAGE))
def test_the_guided_demo_on_a_machine_file_with_damaged_rows_gives_the_honest_figures(tmp_path, published, honest,
                                                                                       monkeypatch, caplog, how):
    path, _ = published
    assert _every_tenth_row(path, ROW_DAMAGE[how]) > 100
    caplog.set_level(logging.WARNING)
    services, found = _demo(tmp_path / "visitor", DEMO_SPECS, monkeypatch)
    assert found == honest[tuple(DEMO_SPECS), "maxsim"]
    assert services.embedder.stats.copied > 0 and services.embedder.stats.computed > 0
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert "damaged" in line and "python -m core warm" in line
    # nothing damaged went into the workspace: without the machine's file it computes nothing again
    monkeypatch.setenv(embedders.MACHINE_VECTORS_ENV, "off")
    again, found = _demo(tmp_path / "visitor", DEMO_SPECS, monkeypatch)
    assert again.embedder.stats.computed == 0 and found == honest[tuple(DEMO_SPECS), "maxsim"]


def _permuted(path) -> None:
    """Every row given another row's vector: sound vectors, of the wrong texts, as another model's file holds."""
    db = sqlite3.connect(str(path))
    rows = db.execute("SELECT key, vec FROM vectors ORDER BY key").fetchall()
    db.executemany("UPDATE vectors SET vec = ? WHERE key = ?", [(rows[i - 1][1], k) for i, (k, _) in enumerate(rows)])
    db.commit()
    db.close()


def _header_of_another_model(path) -> None:
    import json

    _permuted(path)
    db = sqlite3.connect(str(path))
    header = json.loads(db.execute("SELECT value FROM header").fetchone()[0])
    db.execute("UPDATE header SET value = ?", (json.dumps({**header, "model_digest": "f" * 64}),))
    db.commit()
    db.close()


def _truncated(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


def _garbage(path) -> None:
    path.write_bytes(bytes(range(256)) * 4000)


WHOLE_FILE = {"a header from another model": _header_of_another_model, "truncated": _truncated,
              "garbage": _garbage}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WHOLE_FILE))
def test_the_guided_demo_ignores_a_machine_file_it_cannot_trust(tmp_path, published, honest, monkeypatch, caplog,
                                                                case):
    path, model = published
    WHOLE_FILE[case](path)
    caplog.set_level(logging.WARNING)
    services, found = _demo(tmp_path / "visitor", ["paragraph"], monkeypatch, "none")
    assert services.embedder.stats.computed > 0 and services.embedder.stats.copied == 0
    assert found == honest[("paragraph",), "none"]
    [line] = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert "python -m core warm" in line
    assert file_problem(path, model, embedders.model_files(model), full=True) is not None  # what `warm` reads first


@pytest.mark.slow
def test_warm_rebuilds_a_damaged_machine_file(tmp_path, published, monkeypatch, capsys):
    """`python -m core warm` (on paragraph alone, as the slow test above) reads an existing file whole: one with
    damaged rows is rebuilt, and the rebuilt file serves a new workspace's demo without computing anything."""
    path, model = published
    _every_tenth_row(path, _nan)
    monkeypatch.setattr(demo, "DEFAULT_SPECS", ["paragraph"])
    assert main(["warm"]) == 0
    assert re.search(r"\d+ vectors \(\d+ not finite\) in it are damaged; rebuilding it", capsys.readouterr().err)
    assert file_problem(path, model, embedders.model_files(model), full=True) is None
    services, _ = _demo(tmp_path / "visitor", ["paragraph"], monkeypatch)
    assert services.embedder.stats.computed == 0 and services.embedder.stats.copied > 0
