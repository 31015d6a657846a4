"""`python -m bench.chop` on the sample set: the rule backend's throughput and the OpenAI-compatible path against a
real loopback server that answers after a fixed delay."""

from __future__ import annotations

import json

import pytest

from bench import chop
from tests.support.data import ROOT


@pytest.mark.slow
def test_chop_bench_reports_rule_throughput_and_the_openai_path(tmp_path, capsys):
    out = tmp_path / "chop.json"
    assert chop.main(["--data", str(ROOT / "sample_data" / "qa"), "--windows", "6", "--concurrency", "1,3",
                      "--delay", "0.05", "--repeat", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    printed = capsys.readouterr().out
    rule = report["rule"]
    assert rule["windows"] > 50 and rule["windows_per_s"] == pytest.approx(rule["windows"] / rule["seconds"], 0.01)
    assert [row["concurrency"] for row in report["openai"]] == [1, 3]
    for row in report["openai"]:
        # 5 continuity calls and 1 CNM call (the server always answers "same"), all made, none failed
        assert (row["windows"], row["calls"], row["errors"]) == (6, 6, 0)
        assert row["ideal_seconds"] == pytest.approx(0.05 * (-(-5 // row["concurrency"]) + 1))
        assert row["seconds"] >= row["ideal_seconds"]  # the server's own delays cannot be beaten
    assert "windows/s" in printed and "x ideal" in printed
