"""A benchmark asked again of unchanged runs reads its scores (`core.evaluation.bench`'s memo) instead of asking
every question again: the same report, `scores_cached` true. Anything its scores depend on (the retrieval
settings, the questions, the chunks) asks afresh."""

from __future__ import annotations

from dataclasses import replace

from core.evaluation.bench import BenchOptions, bench_dataset
from core.evaluation.results import BenchReport
from core.ingest.datasets import load_dataset
from core.services import Services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.store.retrieval import RetrievalSettings
from tests.support.data import ROOT

SPECS = ["paragraph", "naive-500t"]
COST = ("seconds", "cached", "scores_cached", "vectors_computed")  # what describes one run's work, not its scores


def quality(report: BenchReport) -> dict:
    return {s: {k: v for k, v in r.to_json().items() if k not in COST} for s, r in report.results.items()}


def test_a_second_benchmark_of_unchanged_runs_reads_its_scores_and_a_change_asks_again(warm_embedder, workspace):
    full = load_dataset(ROOT / "sample_data" / "qa")
    kept = {d.doc_id for d in full.documents[:2]}  # two manuals and their questions: small enough to embed here
    dataset = replace(full, documents=full.documents[:2],
                      questions=[q for q in full.questions if all(r.doc_id in kept for r in q.references)])
    assert len(dataset.questions) >= 10
    services = Services(Settings(workspace=str(workspace.root)), workspace, warm_embedder,
                        VectorStore(StoreSettings(path=workspace.chroma)), {})
    options = BenchOptions([1, 10], retrieval=RetrievalSettings("dense"))
    first = bench_dataset(dataset, SPECS, options, services)
    again = bench_dataset(dataset, SPECS, options, services)
    assert [r.scores_cached for r in first.results.values()] == [False, False]
    assert [r.scores_cached for r in again.results.values()] == [True, True]
    assert quality(again) == quality(first)

    qualified = bench_dataset(dataset, SPECS, replace(options, qualify_queries=True), services)
    assert not any(r.scores_cached for r in qualified.results.values())
    assert quality(qualified) != quality(first)
    fewer = replace(dataset, questions=dataset.questions[:-1])
    assert not any(r.scores_cached for r in bench_dataset(fewer, SPECS, options, services).results.values())
    other_chunks = bench_dataset(dataset, ["naive-500t:size=200"], options, services)
    assert not other_chunks.results["naive-500t:size=200"].scores_cached
    # the same run and collection searched under another retrieval policy (not part of the run's identity)
    routed = bench_dataset(dataset, ["paragraph:retrieval=route"], options, services).results
    assert (routed["paragraph:retrieval=route"].cached or {})["collection"]
    assert not routed["paragraph:retrieval=route"].scores_cached
