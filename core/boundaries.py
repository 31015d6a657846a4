"""Scoring continuity decisions as document-boundary detection on a joined stream.

A FALSE decision between windows i-1 and i predicts "a new document starts here". A true join at offset j is
found by a FALSE at the first window that reaches past j (the one that straddles the join) or at the window
after it (the first one wholly inside the new document): with overlapping windows either reading is fair.
Each join is matched at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class BoundaryScores:
    predicted: int
    true: int
    matched: int

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.true if self.true else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score_boundaries(window_ends: Sequence[int], decisions: Sequence[bool | None],
                     joins: Sequence[int]) -> BoundaryScores:
    """`window_ends[i]` is the end offset of window i; `decisions[i]` the continuity from window i-1 to i
    (None for the first window)."""
    predicted = [i for i, d in enumerate(decisions) if d is False]
    used: set[int] = set()
    matched = 0
    for j in joins:
        first = next((i for i, end in enumerate(window_ends) if end > j), None)
        if first is None:
            continue
        for candidate in (first, first + 1):
            if candidate in predicted and candidate not in used:
                used.add(candidate)
                matched += 1
                break
    return BoundaryScores(len(predicted), len(joins), matched)
