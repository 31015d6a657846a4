"""Ranking agreement between two question sets (core.evaluation.agreement): Kendall's tau-b and top-1, by hand on
small rankings. End to end through bench/agreement.py: tests/bench/test_agreement_bench.py."""

from __future__ import annotations

import pytest

from core.evaluation.agreement import ranking_agreement
from core.infra.errors import ChunkLensError


def test_tau_and_top1_on_small_rankings():
    gold = {"a": 0.9, "b": 0.5, "c": 0.1}
    same = ranking_agreement(gold, {"a": 0.4, "b": 0.3, "c": 0.2})  # other figures, the same order
    assert same["tau"] == 1.0 and same["top1_agree"] and same["best_generated"] == ["a"]
    reverse = ranking_agreement(gold, {"a": 0.1, "b": 0.5, "c": 0.9})
    assert reverse["tau"] == -1.0 and not reverse["top1_agree"]
    tied = ranking_agreement(gold, {"a": 0.7, "b": 0.7, "c": 0.1})  # tau-b: a tie is neither agreement nor not
    assert 0 < tied["tau"] < 1 and tied["best_generated"] == ["a", "b"] and tied["top1_agree"]
    flat = ranking_agreement(gold, {"a": 0.5, "b": 0.5, "c": 0.5})  # no order at all: no tau
    assert flat["tau"] is None
    assert ranking_agreement(gold, {"a": 1.0, "b": 0.0, "zzz": 0.3})["chunkers"] == ["a", "b"]
    with pytest.raises(ChunkLensError):
        ranking_agreement(gold, {"a": 1.0})
