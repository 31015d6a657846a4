"""Intervals and paired tests (`core.evaluation.significance`): the test's size (no difference is never
significant; over many simulated null pairs it rejects at most 5 %), its power (a real difference is found), Holm's
correction and the minimum detectable difference against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.significance import (
    compare,
    headline_metrics,
    holm,
    intervals,
    min_detectable,
    questions_needed,
    sign_flip_p,
)

N = 56  # the guided demo's questions


def bernoulli(rate: float, seed: int, n: int = N) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < rate).astype(float)


def test_a_chunker_against_a_copy_of_itself_is_never_significant():
    a = bernoulli(0.5, 1)
    [pair] = compare({"x": {"hit@1": a}, "copy": {"hit@1": a.copy()}}, ["hit@1"])
    assert (pair.diff, pair.ci95, pair.p, pair.p_holm, pair.significant) == (0.0, (0.0, 0.0), 1.0, 1.0, False)


def test_over_many_null_pairs_the_test_rejects_at_most_five_percent():
    rng = np.random.default_rng(7)
    rates = rng.uniform(0.1, 0.9, size=(2000, 1))
    a = (rng.random((2000, N)) < rates).astype(float)  # two chunkers alike on every question's odds
    b = (rng.random((2000, N)) < rates).astype(float)
    rejected = float((sign_flip_p(a - b, flips=4000) < 0.05).mean())
    assert 0.01 < rejected <= 0.05


def test_a_real_difference_is_found():
    a, b = bernoulli(0.7, 2), bernoulli(0.3, 3)
    [pair] = compare({"good": {"hit@1": a}, "poor": {"hit@1": b}}, ["hit@1"])
    assert pair.significant and pair.p < 0.01 and pair.ci95[0] > 0
    assert pair.diff == pytest.approx(a.mean() - b.mean())


def test_every_interval_holds_its_figure_and_is_reproducible():
    table = np.vstack([bernoulli(r, s) for s, r in enumerate((0.02, 0.2, 0.5, 0.9, 1.0))])
    bounds = intervals(table)
    means = table.mean(axis=1)
    assert np.all(bounds[:, 0] <= means) and np.all(means <= bounds[:, 1])
    assert np.array_equal(bounds, intervals(table))
    assert bounds[-1].tolist() == [1.0, 1.0]  # the same on every question
    width = bounds[2, 1] - bounds[2, 0]  # about +-1.96 * sqrt(.25 / 56) = +-0.13 for a rate near one half
    assert 0.2 < width < 0.32


def test_holm_matches_the_step_down_by_hand():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5] and holm([]) == []


def test_the_minimum_detectable_difference_and_the_questions_a_gap_needs():
    assert min_detectable(0.5, 56) == pytest.approx((1.959964 + 0.841621) * 0.5 / 56 ** 0.5, rel=1e-5)
    assert questions_needed(0.1, 0.5) == 197
    assert questions_needed(0.0, 0.5) is None


def test_headline_metrics_follow_the_ks_and_spans():
    assert headline_metrics([1, 3, 10], True) == ["hit@1", "hit@10", "mrr@10", "wrong_doc@10", "span_recall@10"]
    assert headline_metrics([5], False) == ["hit@5", "mrr@5", "wrong_doc@5"]


def test_a_bench_report_keeps_per_question_scores_intervals_and_pairs(warm_embedder, workspace):
    from dataclasses import replace

    from core.evaluation.bench import BenchOptions, bench_dataset, format_table
    from core.evaluation.report import markdown_table
    from core.ingest.datasets import load_dataset
    from core.services import Services
    from core.settings import Settings
    from core.store.index import StoreSettings, VectorStore
    from core.store.retrieval import RetrievalSettings
    from tests.support.data import ROOT

    full = load_dataset(ROOT / "sample_data" / "qa")
    kept = {d.doc_id for d in full.documents[:3]}
    dataset = replace(full, documents=full.documents[:3],
                      questions=[q for q in full.questions if all(r.doc_id in kept for r in q.references)])
    services = Services(Settings(workspace=str(workspace.root)), workspace, warm_embedder,
                        VectorStore(StoreSettings(path=workspace.chroma)), {})
    specs = ["paragraph", "naive-500t", "sentence"]
    report = bench_dataset(dataset, specs, BenchOptions([1, 10], retrieval=RetrievalSettings("dense")), services)
    n = len(dataset.questions)
    assert report["qids"] == [q.qid for q in dataset.questions]
    for r in report["results"].values():
        assert len(r["per_question"]["hit@1"]) == n and np.mean(r["per_question"]["hit@1"]) == r["hit@1"]
        for metric in ("hit@1", "mrr@10", "wrong_doc@10", "span_recall@10"):
            low, high = r[f"{metric}_ci95"]
            assert low <= r[metric] <= high
    assert {(p["a"], p["b"]) for p in report["pairs"]} == {("paragraph", "naive-500t"), ("paragraph", "sentence"),
                                                          ("naive-500t", "sentence")}
    assert {p["metric"] for p in report["pairs"]} == set(headline_metrics([1, 10], True))
    assert all(set(p) == {"a", "b", "metric", "diff", "ci95", "p", "p_holm", "significant"} for p in report["pairs"])
    assert "Reliably apart" in format_table(report) and "Reliably apart" in markdown_table(report, ["hit"])
    hit = report["results"]["paragraph"]["hit@1"]
    assert f"{hit:.3f} [" in markdown_table(report, ["hit"])
