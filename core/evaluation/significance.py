"""Is a difference real? Intervals for every figure, and paired tests for every comparison, over the questions.

A benchmark here asks 40 to 60 questions, so one question moves hit@1 by about 0.02 and most gaps between plain
chunkers are two or three questions. Every figure therefore gets a 95 % interval by bootstrap over questions
(scipy.stats.bootstrap, percentile method, seeded: the same report gives the same intervals), and every pair of
chunkers a paired comparison on the headline metrics: the mean per-question difference, its bootstrap interval,
and the p-value of a paired randomisation test, Holm-corrected over the pairs reported.

The randomisation test is the sign-flip test IR evaluation has used for decades (trec_eval's and ranx's Fisher
randomisation): under "no difference", each question's difference is as likely positive as negative, so the
observed mean is compared with the means of the same differences under random signs. scipy's
`permutation_test(permutation_type="samples")` computes exactly this but took 9.8 s for 28 pairs of 56 questions
on the 2-core machine; here all random signs are drawn once and every pair's null distribution is one matrix
product (a few ms), which is what keeps intervals and pairs for 8 chunkers within a second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
BOOTSTRAP_RESAMPLES = 2000
SIGN_FLIPS = 10_000
SEED = 0  # every interval and p-value is reproducible from the report's own per-question scores
POWER = 0.8  # for the minimum detectable difference


def intervals(table: np.ndarray, seed: int = SEED) -> np.ndarray:
    """95 % bootstrap intervals of each row's mean: `table` is (figures, questions); the result (figures, 2).
    A figure that is the same on every question (or asked of one question) has the interval [value, value]."""
    from scipy.stats import bootstrap

    table = np.atleast_2d(np.asarray(table, dtype=np.float64))
    out = np.repeat(table.mean(axis=1, keepdims=True), 2, axis=1) if table.size else np.zeros((len(table), 2))
    varied = np.ptp(table, axis=1) > 0 if table.shape[1] > 1 else np.zeros(len(table), dtype=bool)
    if varied.any():
        found = bootstrap((table[varied],), np.mean, axis=-1, vectorized=True, n_resamples=BOOTSTRAP_RESAMPLES,
                          confidence_level=CONFIDENCE, method="percentile", random_state=seed)
        out[varied, 0], out[varied, 1] = found.confidence_interval.low, found.confidence_interval.high
    return out


def sign_flip_p(diffs: np.ndarray, flips: int = SIGN_FLIPS, seed: int = SEED) -> np.ndarray:
    """Two-sided p-values of paired randomisation (sign-flip) tests: `diffs` is (comparisons, questions) of
    per-question differences; the result (comparisons,). (1 + as extreme) / (1 + flips): never 0, and exactly 1
    when every difference is 0."""
    diffs = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = diffs.shape[1]
    if n == 0:
        return np.ones(len(diffs))
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(flips, n))
    observed = np.abs(diffs.mean(axis=1))
    null = np.abs(signs @ diffs.T) / n  # (flips, comparisons)
    extreme = (null >= observed[None, :] - 1e-12).sum(axis=0)
    return (1 + extreme) / (1 + flips)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: controls the chance of any false "significant" among these tests at ALPHA."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def min_detectable(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean paired difference a test at `alpha` finds with probability `power`, for per-question
    differences of standard deviation `sd` over `n` questions (normal approximation)."""
    from scipy.stats import norm

    if n < 2:
        return math.inf
    return (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / math.sqrt(n)


def questions_needed(gap: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """How many questions make `gap` detectable (None when it is 0: no number of questions settles no gap)."""
    from scipy.stats import norm

    if gap == 0 or sd == 0:
        return None
    return math.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / abs(gap)) ** 2)


@dataclass(frozen=True)
class Pair:
    """Chunker `a` against chunker `b` on one metric: the mean of a - b over the questions, with its interval and
    the paired test's p-value before and after Holm's correction."""

    a: str
    b: str
    metric: str
    diff: float
    ci95: tuple[float, float]
    p: float
    p_holm: float

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "metric": self.metric, "diff": self.diff, "ci95": list(self.ci95),
                "p": self.p, "p_holm": self.p_holm, "significant": self.significant}


def headline_metrics(ks: Sequence[int], has_spans: bool) -> list[str]:
    """The metrics every pair is compared on: hit at the smallest and largest k, MRR and wrong_doc at the largest,
    and span recall at the largest where the set has gold spans."""
    lo, hi = min(ks), max(ks)
    return [*dict.fromkeys([f"hit@{lo}", f"hit@{hi}"]), f"mrr@{hi}", f"wrong_doc@{hi}",
            *([f"span_recall@{hi}"] if has_spans else [])]


def compare(per_question: Mapping[str, Mapping[str, Sequence[float]]], metrics: Sequence[str]) -> list[Pair]:
    """Every pair of chunkers (in the order given, a before b) on every metric, Holm-corrected over all of them."""
    names = list(per_question)
    rows: list[tuple[str, str, str]] = []
    diffs: list[np.ndarray] = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for metric in metrics:
                if metric in per_question[a] and metric in per_question[b]:
                    rows.append((a, b, metric))
                    diffs.append(np.asarray(per_question[a][metric], float) - np.asarray(per_question[b][metric],
                                                                                       float))
    if not rows:
        return []
    table = np.vstack(diffs)
    bounds = intervals(table)
    pvalues = sign_flip_p(table)
    adjusted = holm(list(pvalues))
    return [Pair(a, b, metric, float(table[j].mean()), (float(bounds[j, 0]), float(bounds[j, 1])),
                 float(pvalues[j]), float(adjusted[j])) for j, (a, b, metric) in enumerate(rows)]
