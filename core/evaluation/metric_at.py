"""A metric at a cut-off, as a typed pair: what code names when it asks a report for a figure ("hit at 1"), so
a misspelt metric is a type error and not a silent None. A bench report file keys each figure as
"<metric>@<k>" (the JSON contract, never renamed); outside the report's own reader (`core.evaluation.results`),
`MetricAt.key` is the one place that spells that key.

A report's paired comparisons also cover scores that are not a metric at k (the Chroma protocol's
`span_precision_omega`): they travel as `ScoreKey`, the name a report's own `pairs` give, so code can hand
on a name it read from a report but cannot pass a string it wrote itself where a metric is asked for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NewType, cast, get_args

from core.evaluation.results import ChunkerReport, Metric, number_or_none

#: a per-question score's name as a report's paired comparisons hold it (`compared_metrics`)
ScoreKey = NewType("ScoreKey", str)
#: the metrics where less is better (wrong_doc@k counts collisions)
LOWER_IS_BETTER: tuple[Metric, ...] = ("wrong_doc",)
_KEY = re.compile(rf"^({'|'.join(get_args(Metric))})@([1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class MetricAt:
    """One metric at one cut-off k: `MetricAt("hit", 1)` is hit@1."""

    metric: Metric
    k: int

    @property
    def key(self) -> str:
        """The key a bench report holds this figure under ("hit@1"), and its label in a table."""
        return f"{self.metric}@{self.k}"

    def __str__(self) -> str:
        return self.key

    @property
    def lower_is_better(self) -> bool:
        return self.metric in LOWER_IS_BETTER

    def of(self, result: ChunkerReport) -> float | None:
        """This figure of one chunker's result, None when the report has none."""
        return result.at(self.metric, self.k)

    def interval_of(self, result: ChunkerReport) -> tuple[float, float] | None:
        """This figure's 95 % interval in one chunker's result, when the report has one."""
        return result.interval(self.metric, self.k)

    def read(self, row: Mapping[str, object]) -> float:
        """This figure in a row of scores keyed as a report keys them (a chunker's result in a study's file,
        `evaluate`'s scores); a KeyError naming the key when the row has no number there."""
        value = number_or_none(row.get(self.key))
        if value is None:
            raise KeyError(f"no {self.key} in this row of scores")
        return value

    @classmethod
    def parse(cls, key: str) -> MetricAt | None:
        """The metric at k a report's key names ("hit@10"), None for any other score's name."""
        found = _KEY.match(key)
        return None if found is None else cls(cast(Metric, found[1]), int(found[2]))


def key_of(scored: MetricAt | ScoreKey) -> str:
    """The report's key for a metric at k, or a score's own name as the report gave it."""
    return scored.key if isinstance(scored, MetricAt) else scored


def figure_text(result: ChunkerReport, at: MetricAt, digits: int = 3) -> str:
    """A figure with its 95 % interval when the report has one ("0.536 [0.41, 0.66]"), the figure alone when not,
    "-" without it: how the tables of a report write a headline figure."""
    value, bounds = at.of(result), at.interval_of(result)
    if value is None:
        return "-"
    if bounds is None:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


def interval_text(result: ChunkerReport, at: MetricAt) -> str:
    """A chunker's 95 % interval for a figure as "[0.05, 0.21]", or "-" when the report has none."""
    bounds = at.interval_of(result)
    return "-" if bounds is None else f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"
