"""The Benchmark page on a shared server scores at most the operator's `max_bench_questions` of a set, and says so
in one line (the choice and the setting: tests/unit/test_bench_question_cap.py)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from components.html import md_escape
from core.ingest.datasets import load_dataset
from core.workbench import capped_questions, question_cap_line
from tests.support.appflow import click, load_sample
from tests.support.data import ROOT


def test_a_shared_servers_benchmark_scores_the_capped_questions_and_says_how_many_of_how_many(app_workspace,
                                                                                              monkeypatch):
    monkeypatch.setenv("CHUNKLENS_MODE", "shared")
    monkeypatch.setenv("CHUNKLENS_MAX_BENCH_QUESTIONS", "10")
    sample = load_dataset(ROOT / "sample_data" / "qa")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["naive-500t"]
    at = load_sample(at.run())
    at.switch_page("pages/benchmark.py").run()
    at.multiselect[0].set_value(["naive-500t"]).run()
    at = click(at, "Run benchmark", timeout=600)
    assert not at.exception and not at.error
    report = at.session_state["bench_report"]
    assert report["n_questions"] == 10 and report["qids"] == [q.qid for q in capped_questions(sample.questions, 10)]
    assert report["question_cap"] == {"scored": 10, "of": len(sample.questions), "cap": 10}
    line = question_cap_line(report)
    assert line is not None and line.startswith(f"Scored 10 of the set's {len(sample.questions)} questions")
    assert [i.value for i in at.info if i.value.startswith("Scored ")] == [md_escape(line)]
