"""Every committed bench report read into the typed report and written again is the same JSON, key order included:
the typed fields, the metrics at each cut-off and whatever a method or an older report carries all come back, so a
report shown, relabelled or rewritten by the app is the report the bench wrote."""

from __future__ import annotations

import json

import pytest

from core.evaluation.results import BenchReport, ChunkerReport
from core.infra.errors import ChunkLensError
from tests.support.data import ROOT

RESULTS = ROOT / "docs" / "results"


def _is_bench_report(value: object) -> bool:
    """The shape of a bench report (the other studies in docs/results have neither `results` nor `k`)."""
    return isinstance(value, dict) and "results" in value and "k" in value


def _committed_reports() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for i, item in enumerate(data if isinstance(data, list) else [data]):
            if _is_bench_report(item):
                out.append((f"{path.name}[{i}]", item))
    return out


REPORTS = _committed_reports()


def test_the_committed_reports_are_all_checked():
    # 52 reports in 51 files when this test was written; more may come, none may go unnoticed
    assert len(REPORTS) >= 52 and len({name.split("[")[0] for name, _ in REPORTS}) >= 50


@pytest.mark.parametrize("name, data", REPORTS, ids=[name for name, _ in REPORTS])
def test_a_committed_report_round_trips_to_the_same_json(name, data):
    report = BenchReport.from_json(data, name)
    assert json.dumps(report.to_json()) == json.dumps(data)
    for spec, result in report.results.items():
        assert json.dumps(result.to_json()) == json.dumps(data["results"][spec])


def test_the_typed_fields_hold_what_the_report_says():
    name, data = next((n, d) for n, d in REPORTS if n.startswith("peers_sample"))
    report = BenchReport.from_json(data, name)
    assert report.dataset == data["dataset"] and report.ks == data["k"] and report.qids == data["qids"]
    spec, raw = next(iter(data["results"].items()))
    result = report.results[spec]
    assert isinstance(result, ChunkerReport) and result.spec == spec
    assert result.n_chunks == raw["n_chunks"] and result.seconds == raw["seconds"]
    assert result.at("hit", 1) == raw["hit@1"] and result.interval("hit", 1) == tuple(raw["hit@1_ci95"])
    assert result.per_question["hit@1"] == raw["per_question"]["hit@1"]
    assert result.number("boundary_f1") is None and result.get("chunker_notes") == raw["chunker_notes"]


def test_a_key_no_field_knows_and_a_value_of_the_wrong_type_are_kept():
    data = {"future_key": {"a": [1, 2]}, "dataset": "d", "k": [1], "embedder": 7,
            "results": {"x": {"n_chunks": "many", "hit@1": 0.5, "mrr@1": 0.5, "hit@1_ci95": [0.1], "new": None}}}
    report = BenchReport.from_json(data)
    assert json.dumps(report.to_json()) == json.dumps(data)
    assert report.embedder is None and report.results["x"].n_chunks is None
    assert report.results["x"].interval("hit", 1) is None


def test_a_built_report_writes_its_keys_in_the_contract_order():
    built = BenchReport(dataset="d", embedder="e", n_documents=1, n_questions=2, k=[1], store="s",
                        retrieval={"mode": "dense"}, peer_versions={}, results={}, qids=["q"], pairs=[])
    assert list(built.to_json()) == ["dataset", "embedder", "n_documents", "n_questions", "k", "qualify_queries",
                                     "joined", "store", "retrieval", "peer_versions", "results", "qids", "pairs"]
    capped = built.adding("question_cap", {"scored": 1, "of": 2, "cap": 1})
    assert list(capped.to_json())[-1] == "question_cap" and "question_cap" not in built.to_json()


@pytest.mark.parametrize("bad, message", [
    ({"a": 1}, "not a bench report (no 'results' and 'k')"),
    ({"k": [1], "results": {"x": {"hit@1": 0.5}}}, "'x' has no mrr@1"),
    ({"k": [1], "results": {"x": {"hit@1": 0.5, "mrr@1": 1, "odd": {1, 2}}}}, "the value of 'odd' of 'x' is not JSON"),
])
def test_what_is_not_a_report_is_one_line(bad, message):
    with pytest.raises(ChunkLensError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        BenchReport.from_json(bad, "upload")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("upload: ")


def test_what_the_command_line_and_the_studies_change_keeps_every_other_key_in_place():
    name, data = next((n, d) for n, d in REPORTS if n.startswith("peers_sample"))
    report = BenchReport.from_json(data, name)
    spec = next(iter(report.results))
    more = report.with_llm_use({spec: {"calls": 3, "tokens_in": 10, "tokens_out": 4}}).to_json()
    assert more["results"][spec]["llm_calls"] == data["results"][spec]["llm_calls"] + 3
    assert list(more["results"][spec]) == list(data["results"][spec]) and list(more) == list(data)
    lighter = report.without_sources().to_json()
    assert all("top1_sources" not in r for r in lighter["results"].values())
    assert [k for k in data["results"][spec] if k != "top1_sources"] == list(lighter["results"][spec])
    named = report.labelled(str.upper)
    assert set(named.results) == {s.upper() for s in report.results}
    assert named.results[spec.upper()].spec == spec.upper()
    assert {p["a"] for p in named.pairs} <= set(named.results)
    assert json.dumps(report.to_json()) == json.dumps(data)  # the report itself untouched
