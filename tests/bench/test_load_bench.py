"""`python -m bench.load` against the real app in Debian's chromium: one and two concurrent sessions, one question
each, on the first 9,000 characters of one sample manual; the JSON has its fields and no query failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import load
from tests.support.data import ROOT


@pytest.mark.slow
def test_one_and_two_sessions_answer_without_errors(tmp_path):
    if not Path(load.CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (scripts/setup.sh --test installs it)")
    out = tmp_path / "load.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    run = subprocess.run(
        [sys.executable, "-m", "bench.load", "--sessions", "1,2", "--queries", "1", "--docs", "1", "--chars", "9000",
         "--timeout", "60", "--warm-up-timeout", "240", "--workspace", str(tmp_path / "ws"), "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=420,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())

    assert report["options"]["sessions"] == [1, 2] and report["machine"]["cpu_count"] >= 1
    assert report["data"]["documents"] == 1 and report["data"]["chars"] == 9000 and report["data"]["questions"] >= 1
    assert report["data"]["specs"] and report["app"]["warm_up_seconds"] > 0
    assert report["app"]["peak_rss_mb"] >= report["app"]["rss_after_warm_up_mb"] > 0
    levels = {lv["sessions"]: lv for lv in report["levels"]}
    assert set(levels) == {1, 2}
    for n, lv in levels.items():
        assert lv["errors"] == 0, lv["error_messages"]
        assert lv["queries"] == n
        assert 0 < lv["p50_s"] <= lv["p95_s"] <= lv["max_s"]
        assert lv["setup_p50_s"] > 0 and lv["queries_per_s"] > 0 and lv["app_peak_rss_mb"] > 0
        assert lv["app_cpu_s"] > 0 and lv["browser_cpu_s"] > 0
    assert "p95 s" in run.stdout and "app peak RSS MB" in run.stdout


def test_percentile_is_nearest_rank():
    values = [float(x) for x in range(1, 21)]  # 1..20
    assert load.percentile(values, 50) == 10.0
    assert load.percentile(values, 95) == 19.0
    assert load.percentile([3.0], 95) == 3.0
    assert load.percentile([], 50) is None


def test_cut_sample_set_keeps_only_questions_whose_spans_survive(tmp_path):
    folder = load.data_folder(tmp_path, docs=1, chars=9000)
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
    assert [len(d["text"]) for d in docs] == [9000]
    assert questions and all(r["doc_id"] == docs[0]["doc_id"] and r["end"] <= 9000
                             for q in questions for r in q["references"])
    assert load.data_folder(tmp_path, docs=7) == load.data_folder(tmp_path, docs=99)  # the whole set, untouched
