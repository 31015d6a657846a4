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

Memory stays O(resamples x questions) however many figures and pairs there are. scipy's vectorized bootstrap
resamples every figure at once (figures x 2,000 x questions doubles: 2.7 GB for 8 chunkers' 112 pairs of 1,500
questions), so `intervals` draws scipy's index matrix itself, once, and adds up every resample's questions in
scipy's own order, 64 figures at a time; the random signs are drawn and multiplied in blocks of rows. Both give
exactly the numbers of the all-at-once code, in a third to half of its time (tests/unit/test_significance.py
compares them with scipy's `bootstrap` and with the committed reports).

With few questions the randomisation test is exact: up to 13 questions every one of the 2^n sign patterns is
counted instead of 10,000 random ones, and differences that are the same on every question (one chunker ahead on
each) get the exact 2^(1 - n) at any n, the sign test's p.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from core.infra.jsonio import JsonObject

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
BOOTSTRAP_RESAMPLES = 2000
SIGN_FLIPS = 10_000
SEED = 0  # every interval and p-value is reproducible from the report's own per-question scores
POWER = 0.8  # for the minimum detectable difference


#: figures whose resampled sums are added up together (two arrays of FIGURES_AT_ONCE x 2,000 doubles)
FIGURES_AT_ONCE = 64
#: random sign patterns multiplied at once, and pairs per product: the sign-flip test's working memory
FLIP_ROWS = 500
PAIRS_AT_ONCE = 256


def intervals(table: np.ndarray, seed: int = SEED) -> np.ndarray:
    """95 % bootstrap intervals of each row's mean: `table` is (figures, questions); the result (figures, 2).
    A figure that is the same on every question (or asked of one question) has the interval [value, value].
    The numbers are scipy.stats.bootstrap's (vectorized, percentile method, `random_state=seed`) to the bit."""
    from scipy.stats import quantile

    table = np.atleast_2d(np.asarray(table, dtype=np.float64))
    out = np.repeat(table.mean(axis=1, keepdims=True), 2, axis=1) if table.size else np.zeros((len(table), 2))
    varied = np.ptp(table, axis=1) > 0 if table.shape[1] > 1 else np.zeros(len(table), dtype=bool)
    if varied.any():
        means = resampled_means(table[varied], seed)
        alpha = (1 - CONFIDENCE) / 2  # as scipy computes the percentile method's bounds
        bounds = quantile(means, np.asarray([alpha, 1 - alpha]), axis=-1)
        out[varied, 0], out[varied, 1] = bounds[..., 0], bounds[..., 1]
    return out


def resampled_means(sample: np.ndarray, seed: int = SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """Each row's mean over `resamples` bootstrap resamples of its columns, (rows, resamples): scipy's bootstrap
    distribution for `random_state=seed`, without its rows x resamples x questions array.

    scipy draws one (resamples, questions) index matrix from `RandomState(seed)` and averages `sample[..., index]`,
    an array that holds the rows innermost: numpy adds each mean's questions one after another, in order. Adding
    them in that order here, one question of every resample at a time, gives every mean, and so every interval,
    to the last bit. A single row is the exception: alone it is contiguous and numpy sums it pairwise, so it is
    averaged as scipy averages it (one resamples x questions array)."""
    rows, n = sample.shape
    index = np.random.RandomState(seed).randint(0, n, size=(resamples, n), dtype=np.int64)
    if rows == 1:
        return sample[..., index].mean(axis=-1)
    drawn = np.ascontiguousarray(index.T)  # question position -> the question each resample drew there
    means = np.empty((rows, resamples))
    for lo in range(0, rows, FIGURES_AT_ONCE):
        block = sample[lo:lo + FIGURES_AT_ONCE]
        total = block[:, drawn[0]]
        for column in drawn[1:]:
            total += block[:, column]
        means[lo:lo + FIGURES_AT_ONCE] = total / n
    return means


def sign_flip_p(diffs: np.ndarray, flips: int = SIGN_FLIPS, seed: int = SEED) -> np.ndarray:
    """Two-sided p-values of paired randomisation (sign-flip) tests: `diffs` is (comparisons, questions) of
    per-question differences; the result (comparisons,). Never 0, and exactly 1 when every difference is 0.

    Up to log2(flips) questions every sign pattern is counted (the exact test); beyond, (1 + as extreme) /
    (1 + flips) over `flips` random patterns. Differences the same on every question are as extreme only under
    the two patterns that give every question the same sign: 2^(1 - n) exactly."""
    diffs = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = diffs.shape[1]
    if n == 0:
        return np.ones(len(diffs))
    observed = np.abs(diffs.mean(axis=1))
    if 2 ** n <= flips:
        patterns = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
        return _as_extreme(patterns, diffs, observed) / 2 ** n
    rng = np.random.default_rng(seed)
    extreme = np.zeros(len(diffs), dtype=np.int64)
    for done in range(0, flips, FLIP_ROWS):  # the same draws as one (flips, n) matrix, a block of rows at a time
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(FLIP_ROWS, flips - done), n))
        extreme += _as_extreme(signs, diffs, observed)
    p = (1 + extreme) / (1 + flips)
    same = (np.ptp(diffs, axis=1) == 0) & (diffs[:, 0] != 0)
    p[same] = 2.0 ** (1 - n)
    return p


def _as_extreme(signs: np.ndarray, diffs: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """For each comparison, how many of these sign patterns give a mean difference at least as far from 0 as the
    observed one (PAIRS_AT_ONCE comparisons per product)."""
    n = diffs.shape[1]
    counts = np.empty(len(diffs), dtype=np.int64)
    for lo in range(0, len(diffs), PAIRS_AT_ONCE):
        hi = lo + PAIRS_AT_ONCE
        null = np.abs(signs @ diffs[lo:hi].T) / n  # (patterns, comparisons)
        counts[lo:hi] = (null >= observed[None, lo:hi] - 1e-12).sum(axis=0)
    return counts


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


def questions_needed(gap: float, sd: float, alpha: float = ALPHA, power: float = POWER,
                     comparisons: int = 1) -> int | None:
    """How many questions make `gap` detectable (None when it is 0: no number of questions settles no gap).
    Differences of one size on every question (sd 0) are settled by the exact count of `unanimous_needed`, with
    `comparisons` the pairs Holm's correction weighs them against; otherwise the normal approximation."""
    from scipy.stats import norm

    if gap == 0:
        return None
    if sd == 0:
        return unanimous_needed(comparisons, alpha)
    return math.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / abs(gap)) ** 2)


def unanimous_needed(comparisons: int = 1, alpha: float = ALPHA) -> int:
    """The fewest questions on which one chunker ahead on every one is reliably ahead: the sign-flip test's exact
    p for n such questions is 2^(1 - n), and Holm's correction multiplies it by up to `comparisons`."""
    n = 1
    while max(1, comparisons) * 2.0 ** (1 - n) >= alpha:
        n += 1
    return n


class PairJson(TypedDict):
    """A paired comparison as a bench report holds it (`Pair.to_json` writes it), for code that reads a report's
    `pairs`."""

    a: str
    b: str
    metric: str
    diff: float
    ci95: list[float]
    p: float
    p_holm: float
    significant: bool


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

    def to_json(self) -> JsonObject:
        return {"a": self.a, "b": self.b, "metric": self.metric, "diff": self.diff, "ci95": [*self.ci95],
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
    asked = table.shape[1] > 0  # no question: no difference (and no mean of nothing)
    return [Pair(a, b, metric, float(table[j].mean()) if asked else 0.0, (float(bounds[j, 0]), float(bounds[j, 1])),
                 float(pvalues[j]), float(adjusted[j])) for j, (a, b, metric) in enumerate(rows)]
