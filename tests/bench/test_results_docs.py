"""The results pages are generated from the committed JSON reports: regenerating them changes nothing, and the
generator says clearly what is wrong with a bad index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.evaluation.report import render_results
from core.infra.errors import ChunkLensError
from tests.support.data import ROOT


def test_results_md_is_what_the_committed_reports_give():
    assert render_results(Path("docs/results")) == (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8"), (
        "docs/RESULTS.md is stale: run python -m core table --results docs/results --out docs/RESULTS.md")


def test_retrieval_md_is_what_the_committed_reports_give():
    from bench.retrieval import render

    assert render(Path("docs/results")) == (ROOT / "docs" / "RETRIEVAL.md").read_text(encoding="utf-8")


def test_every_section_names_a_report_and_its_command():
    index = json.loads((ROOT / "docs" / "results" / "index.json").read_text(encoding="utf-8"))
    for s in index["sections"]:
        if s.get("kind") == "embedder_choice":  # a study of report pairs: the study and every report it pairs
            study = json.loads((ROOT / "docs" / "results" / s["study"]).read_text(encoding="utf-8"))
            assert "python -m bench.embedder_choice" in s["command"] and s["study"] in s["command"], s["title"]
            assert "python -m core bench" in s["command"], s["title"]
            for pair in study["reports"]:
                assert (ROOT / "docs" / "results" / pair["old"]).exists() and (ROOT / "docs" / "results" /
                                                                              pair["new"]).exists(), pair
            continue
        reports = [s["report"]] if "report" in s else sorted({row["report"] for row in s["rows"]})
        for report in reports:
            assert (ROOT / "docs" / "results" / report).exists(), report
            tool = "python -m bench.agreement" if s.get("kind") == "agreement" else "python -m core bench"
            assert tool in s["command"] and report in s["command"], s["title"]


def test_table_results_writes_the_page(tmp_path, capsys):
    report = json.loads((ROOT / "docs" / "results" / "emanual_galaxy_qualified.json").read_text(encoding="utf-8"))
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    (tmp_path / "index.json").write_text(json.dumps({"title": "T", "sections": [
        {"title": "S", "command": "python -m core bench --out r.json", "report": "r.json", "metrics": ["hit"],
         "k": [1]}]}), encoding="utf-8")
    assert main(["table", "--results", str(tmp_path), "--out", str(tmp_path / "R.md")]) == 0
    page = (tmp_path / "R.md").read_text(encoding="utf-8")
    assert page.startswith("# T\n") and "## S" in page and "| `chop:retrieval=filter` | 1174 |" in page
    assert "| 0.500 |" in page  # chop:retrieval=filter's hit@1 in that report


def test_a_rows_section_puts_chosen_results_of_several_reports_side_by_side(tmp_path):
    for name in ("emanual_galaxy_qualified.json", "sample_cnm_rule.json"):
        (tmp_path / name).write_text((ROOT / "docs" / "results" / name).read_text(encoding="utf-8"), encoding="utf-8")
    rows = [{"label": "galaxy", "report": "emanual_galaxy_qualified.json", "chunker": "chop:retrieval=filter"},
            {"label": "sample", "report": "sample_cnm_rule.json", "chunker": "chop"}]
    (tmp_path / "index.json").write_text(json.dumps({"sections": [
        {"title": "S", "command": "python -m core bench", "rows": rows, "metrics": ["hit"], "k": [1]}]}))
    page = render_results(tmp_path)
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| run | chunker | chunks | hit@1 |") and len(table) == 3
    assert table[1].startswith("| galaxy | `chop:retrieval=filter` | 1174 | 0.500 |")
    assert table[2].startswith("| sample | `chop` |") and "CNM model acc" in table[0]
    rows[1]["chunker"] = "lgmgc"
    (tmp_path / "index.json").write_text(json.dumps({"sections": [
        {"title": "S", "command": "python -m core bench", "rows": rows, "metrics": ["hit"], "k": [1]}]}))
    with pytest.raises(ChunkLensError, match="sample_cnm_rule.json has no result for 'lgmgc'"):
        render_results(tmp_path)


def test_a_bad_index_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(ChunkLensError, match="not a results index"):
        render_results(tmp_path)
    assert main(["table", "--results", str(tmp_path)]) == 2
    assert "not a results index" in capsys.readouterr().err
    assert main(["table"]) == 2
