"""A shared server caps the questions one benchmark scores (`max_bench_questions`, core.workbench.scoring): which
questions a cap keeps (every document's share, seeded, in the set's order), the operator's setting and its
validation, and a real benchmark of the sample set under a cap. The Benchmark page's line: tests/app/
test_bench_question_cap.py."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from core.infra.errors import ConfigError
from core.schema.questions import Question
from core.schema.spans import Span
from core.server_config import ServerConfig, load_server_config
from core.workbench import capped_questions, question_cap_line


def questions_over(per_document: dict[str, int]) -> list[Question]:
    """Questions about each document in turn, interleaved as a real set's often are."""
    left = dict(per_document)
    out: list[Question] = []
    while any(left.values()):
        for doc, n in left.items():
            if n:
                out.append(Question(f"q{len(out)}", f"question {len(out)} about {doc}?", (Span(doc, 0, 5),)))
                left[doc] = n - 1
    return out


def test_no_cap_or_a_set_within_it_keeps_every_question():
    questions = questions_over({"a": 5, "b": 5})
    assert capped_questions(questions, None) == questions == capped_questions(questions, 0)
    assert capped_questions(questions, 10) == questions == capped_questions(questions, 11)


def test_a_cap_keeps_each_documents_share_in_the_sets_order_the_same_every_time():
    questions = questions_over({"a": 300, "b": 100, "c": 50, "d": 1})
    chosen = capped_questions(questions, 100)
    assert len(chosen) == 100 and chosen == capped_questions(questions, 100)
    assert Counter(q.references[0].doc_id for q in chosen) == {"a": 67, "b": 22, "c": 11}  # 66.5, 22.2, 11.1, 0.2
    positions = [questions.index(q) for q in chosen]
    assert positions == sorted(positions)
    assert positions != list(range(100))  # not the first hundred: those are mostly a's and b's early questions
    assert capped_questions(questions, 100, seed=1) != chosen  # the seed picks which; the shares stay
    assert Counter(q.references[0].doc_id for q in capped_questions(questions, 100, seed=1)) == {"a": 67, "b": 22,
                                                                                                 "c": 11}


def test_a_cap_smaller_than_the_documents_keeps_the_largest_shares():
    questions = questions_over({"a": 2, "b": 5, "c": 3, "d": 1})
    assert Counter(q.references[0].doc_id for q in capped_questions(questions, 2)) == {"b": 1, "c": 1}
    unreferenced = [*questions, Question("free", "no gold?", ())]
    assert len(capped_questions(unreferenced, 4)) == 4


def test_the_operators_setting_its_default_and_a_bad_value(tmp_path):
    none = tmp_path / "none.toml"
    default = load_server_config(none, {})
    assert default.max_bench_questions == 1000
    assert default.bench_question_cap("shared") == 1000 and default.bench_question_cap("local") is None
    assert load_server_config(none, {"CHUNKLENS_MAX_BENCH_QUESTIONS": "50"}).bench_question_cap("shared") == 50
    assert ServerConfig(max_bench_questions=0).bench_question_cap("shared") is None  # 0: no cap
    assert ServerConfig(max_bench_questions=0).describe()["benchmark questions"] == "no limit"
    assert default.describe()["benchmark questions"] == "at most 1,000 per benchmark"
    (tmp_path / "server.toml").write_text("max_bench_questions = 200\n")
    assert load_server_config(tmp_path / "server.toml", {}).max_bench_questions == 200
    for bad in ("-1", "many"):
        with pytest.raises(ConfigError, match="max_bench_questions") as caught:
            load_server_config(none, {"CHUNKLENS_MAX_BENCH_QUESTIONS": bad})
        assert "\n" not in str(caught.value)


def test_the_line_says_how_many_of_how_many_and_why():
    line = question_cap_line({"question_cap": {"scored": 1000, "of": 3000, "cap": 1000}})
    assert line is not None and line.startswith("Scored 1,000 of the set's 3,000 questions: this shared server")
    assert "max_bench_questions" in line
    assert question_cap_line({"n_questions": 56}) is None
    assert question_cap_line({"question_cap": {"scored": "x"}}) is None  # a report edited by hand shows nothing


def test_a_capped_benchmark_scores_the_chosen_questions_and_says_so(warm_embedder, workspace):
    from core.ingest.datasets import load_dataset
    from core.services import Services
    from core.settings import Settings
    from core.store.index import StoreSettings, VectorStore
    from core.store.retrieval import RetrievalSettings
    from core.workbench import benchmark
    from tests.support.data import ROOT

    dataset = load_dataset(ROOT / "sample_data" / "qa")
    services = Services(Settings(workspace=str(workspace.root)), workspace, warm_embedder,
                        VectorStore(StoreSettings(path=workspace.chroma)), {})
    dense = RetrievalSettings("dense")
    report = benchmark(services, dataset, ["paragraph"], [1, 10], True, False, retrieval=dense, max_questions=10)
    chosen = capped_questions(dataset.questions, 10)
    assert report["qids"] == [q.qid for q in chosen] and report["n_questions"] == 10
    assert report["question_cap"] == {"scored": 10, "of": len(dataset.questions), "cap": 10}
    assert len(report["results"]["paragraph"]["per_question"]["hit@1"]) == 10
    assert {q.references[0].doc_id for q in chosen} == {d.doc_id for d in dataset.documents}  # every manual asked
    whole = benchmark(services, replace(dataset), ["paragraph"], [1, 10], True, False, retrieval=dense)
    assert whole["n_questions"] == len(dataset.questions) and "question_cap" not in whole
    assert question_cap_line(whole) is None
