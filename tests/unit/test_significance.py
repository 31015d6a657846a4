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
    written = report.to_json()
    n = len(dataset.questions)
    assert report.qids == written["qids"] == [q.qid for q in dataset.questions]
    for r in written["results"].values():
        assert len(r["per_question"]["hit@1"]) == n and np.mean(r["per_question"]["hit@1"]) == r["hit@1"]
        for metric in ("hit@1", "mrr@10", "wrong_doc@10", "span_recall@10"):
            low, high = r[f"{metric}_ci95"]
            assert low <= r[metric] <= high
    pairs = written["pairs"]
    assert {(p["a"], p["b"]) for p in pairs} == {("paragraph", "naive-500t"), ("paragraph", "sentence"),
                                                ("naive-500t", "sentence")}
    assert {p["metric"] for p in pairs} == set(headline_metrics([1, 10], True))
    assert all(set(p) == {"a", "b", "metric", "diff", "ci95", "p", "p_holm", "significant"} for p in pairs)
    assert "Reliably apart" in format_table(report) and "Reliably apart" in markdown_table(report, ["hit"])
    hit = report.results["paragraph"].at("hit", 1)
    assert f"{hit:.3f} [" in markdown_table(report, ["hit"])


RESULTS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "results"


def graded_table(seed: int, figures: int, n: int) -> np.ndarray:
    """Rows shaped like a report's: 0/1 hits, graded reciprocal ranks, and differences of them in [-1, 1]."""
    rng = np.random.default_rng(seed)
    table = (rng.random((figures, n)) < rng.uniform(0.1, 0.9, size=(figures, 1))).astype(float)
    table[1::3] = np.where(rng.random((len(table[1::3]), n)) < 0.6, 1.0 / rng.integers(1, 11, (len(table[1::3]), n)),
                           0.0)
    table[2::3] -= (rng.random((len(table[2::3]), n)) < 0.5)
    return table


@pytest.mark.parametrize(("seed", "figures", "n"), [(0, 1, 56), (1, 2, 2), (2, 3, 50), (3, 7, 129), (4, 12, 513),
                                                    (5, 5, 9), (6, 40, 300)])
def test_intervals_are_scipys_vectorized_bootstrap_to_the_bit(seed, figures, n):
    """The committed reports' intervals came from scipy.stats.bootstrap over all figures at once: resampling a
    few figures at a time must give the very same numbers, for one figure, for an odd count, for many."""
    from scipy.stats import bootstrap

    table = graded_table(seed, figures, n)
    table[-1] = table[-1, 0] if figures > 2 else table[-1]  # a figure the same on every question among them
    varied = np.ptp(table, axis=1) > 0
    found = bootstrap((table[varied],), np.mean, axis=-1, vectorized=True, n_resamples=2000, confidence_level=0.95,
                      method="percentile", random_state=seed)
    bounds = intervals(table, seed=seed)
    assert np.array_equal(bounds[varied, 0], found.confidence_interval.low)
    assert np.array_equal(bounds[varied, 1], found.confidence_interval.high)
    assert np.array_equal(bounds[~varied], np.repeat(table[~varied].mean(axis=1, keepdims=True), 2, axis=1))


def all_at_once_sign_flip_p(diffs: np.ndarray, flips: int = 10_000, seed: int = 0) -> np.ndarray:
    """The randomisation test as the committed reports were computed: every random sign in one matrix."""
    n = diffs.shape[1]
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(flips, n))
    null = np.abs(signs @ diffs.T) / n
    return (1 + (null >= np.abs(diffs.mean(axis=1))[None, :] - 1e-12).sum(axis=0)) / (1 + flips)


@pytest.mark.parametrize(("seed", "pairs", "n"), [(0, 1, 14), (1, 28, 56), (2, 300, 50), (3, 5, 1500)])
def test_the_sign_flip_test_in_blocks_gives_the_p_values_of_one_matrix(seed, pairs, n):
    diffs = graded_table(seed, pairs, n) - graded_table(seed + 100, pairs, n)
    assert np.array_equal(sign_flip_p(diffs), all_at_once_sign_flip_p(diffs))


def test_the_committed_reports_intervals_and_pairs_come_out_the_same():
    """Every committed report that keeps per-question scores: its `*_ci95` and its paired tests, recomputed."""
    import json

    from core.evaluation.bench import with_intervals

    checked = 0
    for path in sorted(RESULTS.glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        results = report.get("results") if isinstance(report, dict) else None
        if not isinstance(results, dict) or not all("per_question" in r for r in results.values()):
            continue
        for spec, r in results.items():
            stored = {key: value for key, value in r.items() if key.endswith("_ci95")}
            assert with_intervals(r["per_question"]) == stored, (path.name, spec)
        metrics = list(dict.fromkeys(p["metric"] for p in report["pairs"]))
        again = [p.to_json() for p in compare({s: r["per_question"] for s, r in results.items()}, metrics)]
        assert again == report["pairs"], path.name
        checked += 1
    assert checked >= 1


def peak_bytes(work) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_statistics_memory_does_not_grow_with_the_figures():
    """Issue 50: scipy's vectorized bootstrap held figures x 2,000 x questions doubles at once (2.8 GB for 8
    chunkers' pairs of 1,500 questions). 40 figures, 2, 1 and 56 pairs here each stay within four arrays of
    2,000 x questions (the resample index and its transpose are two)."""
    n = 200
    unit = 2000 * n * 8
    table = graded_table(11, 40, n)
    compare({"a": {"x": [0.0, 1.0]}, "b": {"x": [1.0, 1.0]}}, ["x"])  # scipy's modules imported before tracing
    for rows in (40, 2, 1):
        assert peak_bytes(lambda rows=rows: intervals(table[:rows])) < 4 * unit, rows
    per_question = {f"c{i}": {"hit@1": table[i], "mrr@10": table[i + 8]} for i in range(8)}
    assert peak_bytes(lambda: compare(per_question, ["hit@1", "mrr@10"])) < 4 * unit


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 13, 14, 20, 56])
def test_one_chunker_ahead_on_every_question_gets_the_exact_p(n):
    """The sign test's p: only the two patterns that give every question one sign are as extreme, 2^(1 - n)
    (1 for one question). The random patterns gave 0.49 for two questions and a floor of 1e-4 beyond 13."""
    assert sign_flip_p(np.ones((1, n)))[0] == 2.0 ** (1 - n)
    assert sign_flip_p(np.full((1, n), -0.25))[0] == 2.0 ** (1 - n)
    [pair] = compare({"a": {"hit@1": [1.0] * n}, "b": {"hit@1": [0.0] * n}}, ["hit@1"])
    assert (pair.diff, pair.ci95, pair.p) == (1.0, (1.0, 1.0), 2.0 ** (1 - n))
    assert pair.significant == (n >= 6)


def test_with_few_questions_every_sign_pattern_is_counted():
    """Up to 13 questions the test is exact: the share of all 2^n sign patterns as extreme as the observed."""
    import itertools

    rng = np.random.default_rng(3)
    for n in (2, 4, 7, 10):
        diffs = rng.integers(-2, 3, size=(6, n)) / 2
        patterns = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
        expected = [(np.abs(patterns @ d) >= abs(d.sum()) - 1e-9).mean() for d in diffs]
        assert np.allclose(sign_flip_p(diffs), expected, rtol=0, atol=1e-15)


def test_no_difference_one_question_and_no_question():
    assert sign_flip_p(np.zeros((2, 40))).tolist() == [1.0, 1.0]  # the same on every question
    assert sign_flip_p(np.zeros((1, 4))).tolist() == [1.0]
    assert sign_flip_p(np.array([[1.0], [0.0]])).tolist() == [1.0, 1.0]  # one question cannot settle anything
    assert sign_flip_p(np.zeros((3, 0))).tolist() == [1.0] * 3
    assert intervals(np.array([[0.5]])).tolist() == [[0.5, 0.5]]
    assert intervals(np.zeros((2, 0))).shape == (2, 2)
    [pair] = compare({"a": {"hit@1": []}, "b": {"hit@1": []}}, ["hit@1"])
    assert (pair.diff, pair.ci95, pair.p) == (0.0, (0.0, 0.0), 1.0)


def test_questions_needed_when_every_question_has_the_same_difference():
    """sd 0 is no tie: six questions all won settle it alone (2^-5 < 0.05), eight against five pairs (Holm)."""
    from core.evaluation.significance import unanimous_needed

    assert questions_needed(1.0, 0.0) == unanimous_needed() == 6
    assert questions_needed(-1.0, 0.0, comparisons=5) == unanimous_needed(5) == 8
    assert questions_needed(0.0, 0.0) is None


def test_a_reports_pair_is_read_as_it_is_written():
    """`PairJson`, the type verdicts read a report's `pairs` as, names exactly the keys `Pair.to_json` writes, in
    their order, so a key added to one and not the other fails here rather than in a reader."""
    from core.evaluation.significance import Pair, PairJson

    written = Pair("a", "b", "hit@1", 0.25, (0.1, 0.4), 0.01, 0.02).to_json()
    assert list(written) == list(PairJson.__annotations__)
    assert written["ci95"] == [0.1, 0.4] and written["significant"] is True
