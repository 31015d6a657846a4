"""The guided demo scores the runs it has just made instead of loading them from the caches a second time: the
report is the one a fresh evaluation gives, and nothing is chunked or indexed again."""

from __future__ import annotations

import pytest

from tests.support.corpora import tiny_folder


@pytest.fixture()
def tiny(tmp_path):
    """Two short manuals and their questions."""
    return tiny_folder(tmp_path / "tiny")


@pytest.mark.slow
def test_runs_just_made_are_scored_as_they_are(tiny, tmp_path, monkeypatch):
    import core.evaluation.bench as bench
    from core.ingest.datasets import load_dataset
    from core.services import build_services
    from core.settings import Settings
    from core.workbench import benchmark, make_corpus, run_chunkers

    services = build_services(Settings(workspace=str(tmp_path / "ws")))
    dataset = load_dataset(tiny)
    specs = ["naive-500t:size=20:overlap=5", "paragraph", "chop"]
    results = run_chunkers(services, make_corpus(dataset.documents, dataset, join=True), specs)
    assert all(r.ok for r in results.values())
    fresh = benchmark(services, dataset, specs, [1, 3], True, True)

    def refuse(*_args, **_kwargs):
        raise AssertionError("a run given as done was chunked or indexed again")

    monkeypatch.setattr(bench, "chunk_documents", refuse)
    monkeypatch.setattr(bench, "index_run", refuse)
    scored = benchmark(services, dataset, specs, [1, 3], True, True, done=results)

    metrics = [k for k in fresh["results"]["chop"] if "@" in k]
    assert len(metrics) > 10
    for spec in specs:
        assert {m: scored["results"][spec][m] for m in metrics} == {m: fresh["results"][spec][m] for m in metrics}
        assert scored["results"][spec]["n_chunks"] == fresh["results"][spec]["n_chunks"] > 0
