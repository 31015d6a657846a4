"""What a bench report's intervals and paired tests say, in the forms the app, the HTML report and `core table`
share: who is reliably ahead of whom, the pairwise matrix of differences, and the closest gap at the top with how
many questions would settle it.

Everything here reads a report's own keys (`pairs`, `per_question`, `<metric>_ci95`, made by
`core.evaluation.bench` with `core.evaluation.significance`), so a report saved a month ago reads the same; a report
from before intervals existed simply has no verdicts (empty results, None), never an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.evaluation.metric_at import LOWER_IS_BETTER, MetricAt, ScoreKey, key_of
from core.evaluation.significance import PairJson, min_detectable, questions_needed

Report = Mapping[str, Any]


def lower_is_better(metric: str) -> bool:
    """wrong_doc@k counts collisions: less is better. Every other metric here is better higher."""
    return metric.split("@")[0] in LOWER_IS_BETTER


def better_first(pair: Mapping[str, Any]) -> tuple[str, str]:
    """A pair's two chunkers, the better one on its metric first (by the sign of `diff` = a - b)."""
    a_better = (pair["diff"] > 0) != lower_is_better(pair["metric"])
    return (pair["a"], pair["b"]) if a_better else (pair["b"], pair["a"])


def gain(pair: Mapping[str, Any]) -> tuple[float, float, float]:
    """How much the better chunker of a pair is better: (difference, interval low, interval high), positive when
    the interval excludes 0, whichever of `a`, `b` is better and whichever way the metric points. `better_first`
    puts `a` first exactly when the metric's direction and the sign of `diff` agree, so turning the pair round by
    the sign of `diff` alone orients it from the better chunker's side."""
    sign = 1.0 if pair["diff"] > 0 else -1.0
    low, high = sorted((sign * pair["ci95"][0], sign * pair["ci95"][1]))
    return sign * pair["diff"], low, high


def pairs_on(report: Report, metric: str) -> list[PairJson]:
    """The report's paired comparisons on `metric`, as `Pair.to_json` wrote them."""
    return [p for p in report.get("pairs") or [] if p.get("metric") == metric]


def compared_metrics(report: Report) -> list[ScoreKey]:
    """The headline metrics the report's pairs cover, in the report's order."""
    return list(dict.fromkeys(ScoreKey(p["metric"]) for p in report.get("pairs") or []))


def ahead_of(report: Report, metric: MetricAt | ScoreKey) -> dict[str, list[str]]:
    """For every chunker, the chunkers it is reliably better than on `metric` (paired test, Holm-corrected)."""
    out: dict[str, list[str]] = {spec: [] for spec in report["results"]}
    for pair in pairs_on(report, key_of(metric)):
        if pair["significant"] and pair["diff"] != 0:
            better, worse = better_first(pair)
            out.setdefault(better, []).append(worse)
    return out


@dataclass(frozen=True)
class PairMatrix:
    """Chunker by chunker on one metric: `gain[i][j]` is how much row i is better than column j (sign turned for
    lower-is-better metrics), None on the diagonal; `marked[i][j]` is True where the paired test says the
    difference is real."""

    metric: str
    chunkers: list[str]
    gain: list[list[float | None]]
    marked: list[list[bool]]
    hover: list[list[str]]


def pair_matrix(report: Report, on: MetricAt | ScoreKey) -> PairMatrix | None:
    metric = key_of(on)
    pairs = pairs_on(report, metric)
    if not pairs:
        return None
    names = [spec for spec in report["results"] if any(spec in (p["a"], p["b"]) for p in pairs)]
    index = {spec: i for i, spec in enumerate(names)}
    n = len(names)
    gain: list[list[float | None]] = [[None] * n for _ in range(n)]
    marked = [[False] * n for _ in range(n)]
    hover = [[""] * n for _ in range(n)]
    sign = -1.0 if lower_is_better(metric) else 1.0
    for p in pairs:
        i, j = index[p["a"]], index[p["b"]]
        low, high = p["ci95"]
        for row, col, s in ((i, j, 1.0), (j, i, -1.0)):
            gain[row][col] = sign * s * p["diff"]
            marked[row][col] = bool(p["significant"])
            a, b = (p["a"], p["b"]) if s > 0 else (p["b"], p["a"])
            lo, hi = (low, high) if s > 0 else (-high, -low)
            same = " (the same on every question)" if lo == hi and p["diff"] != 0 else ""
            hover[row][col] = (f"{a} − {b} on {metric}: {s * p['diff']:+.3f} [{lo:+.2f}, {hi:+.2f}]{same}, "
                               f"p (Holm) = {p['p_holm']:.3g}" + (" — reliably apart" if p["significant"] else
                                                                  " — within noise"))
    return PairMatrix(metric, names, gain, marked, hover)


@dataclass(frozen=True)
class Gap:
    """The leader and the runner-up on one metric: their difference, how large a difference these questions can
    detect (80 % power at the 5 % level), how many questions in all would make this one detectable, on how many
    questions the leader is ahead and behind, and the paired test's Holm-corrected p (None without the pair)."""

    metric: str
    leader: str
    runner_up: str
    diff: float
    n: int
    detectable: float
    needed: int | None
    settled: bool
    ahead: int = 0
    behind: int = 0
    p: float | None = None

    @property
    def more(self) -> int | None:
        return None if self.needed is None else max(0, self.needed - self.n)

    @property
    def every(self) -> bool:
        """The leader is ahead on every question."""
        return self.n > 0 and self.ahead == self.n

    def sentence(self, noun: str = "questions") -> str:
        on_each = (f"on the only {noun.removesuffix('s')}" if self.n == 1 else
                   f"on every one of the {self.n} {noun}")
        if self.settled:
            return (f"On {self.metric}, {self.leader} is reliably ahead of the runner-up {self.runner_up} "
                    f"({self.diff:+.3f}) with these {self.n} {noun}" + (", ahead on each." if self.every else "."))
        p = "" if self.p is None else f" (p = {self.p:.2g}, Holm-corrected)"
        if self.every:
            return (f"On {self.metric}, {self.leader} is ahead of {self.runner_up} {on_each} "
                    f"({self.diff:+.3f}), but so few could be chance{p}: about {self.needed} in all "
                    f"({self.more} more) would settle it if it stays ahead on each.")
        if self.ahead == self.behind == 0:
            return (f"On {self.metric}, {self.leader} and {self.runner_up} score the same {on_each}: more "
                    f"{noun} like these cannot tell them apart.")
        if self.needed is None:
            return (f"On {self.metric}, {self.leader} and {self.runner_up} have the same mean over the {self.n} "
                    f"{noun}, each ahead on some of them: no number of {noun} settles a gap of 0.")
        size = ("" if not math.isfinite(self.detectable)
                else f" {self.n} {noun} detect a difference of about {self.detectable:.2f};")
        return (f"On {self.metric}, {self.leader} leads {self.runner_up} by {abs(self.diff):.3f}, within noise:"
                f"{size} about {self.needed} in all ({self.more} more) would settle a gap this size.")


def closest_gap(report: Report, on: MetricAt | ScoreKey) -> Gap | None:
    """The gap between the best chunker on `on` and the next best, from the per-question scores (None when
    the report has fewer than two chunkers with them, or no question)."""
    metric = key_of(on)
    scored = {spec: r for spec, r in report["results"].items()
              if isinstance(r.get(metric), int | float) and metric in (r.get("per_question") or {})}
    if len(scored) < 2:
        return None
    ranked = sorted(scored, key=lambda s: scored[s][metric], reverse=not lower_is_better(metric))
    leader, runner_up = ranked[0], ranked[1]
    diffs = (np.asarray(scored[leader]["per_question"][metric], float)
             - np.asarray(scored[runner_up]["per_question"][metric], float))
    n = len(diffs)
    if n == 0:
        return None
    better = -diffs if lower_is_better(metric) else diffs  # > 0 where the leader is ahead
    sd = float(diffs.std(ddof=1)) if n > 1 else 0.0
    pair = next((p for p in pairs_on(report, metric) if {p["a"], p["b"]} == {leader, runner_up}), None)
    settled = bool(pair and pair["significant"])
    mean = float(diffs.mean())
    needed = questions_needed(mean, sd, comparisons=len(report.get("pairs") or []))
    return Gap(metric, leader, runner_up, mean, n, min_detectable(sd, n), needed, settled,
               int((better > 0).sum()), int((better < 0).sum()), None if pair is None else float(pair["p_holm"]))


@dataclass(frozen=True)
class IntervalRow:
    """One chunker's figure for one metric with its 95 % bounds (for charts and tables)."""

    chunker: str
    metric: str
    value: float
    low: float
    high: float


def interval_rows(report: Report, metrics: Sequence[MetricAt | ScoreKey]) -> list[IntervalRow]:
    """One row per chunker and metric with an interval."""
    rows = []
    for spec, r in report["results"].items():
        for metric in map(key_of, metrics):
            bounds = r.get(f"{metric}_ci95")
            if isinstance(r.get(metric), int | float) and isinstance(bounds, list) and len(bounds) == 2:
                rows.append(IntervalRow(spec, metric, float(r[metric]), float(bounds[0]), float(bounds[1])))
    return rows

