"""The downloadable HTML report (core/outputs/report_html.py, `python -m core report`) of a real committed bench report:
what it holds, that it needs no network, that the summary follows the numbers, that names are escaped, and the
command line's file and one-line errors."""

from __future__ import annotations

import copy
import html
import json
import re
import subprocess
import sys

import pytest

import core
from core.evaluation.report import retrieval_phrase
from core.evaluation.results import BenchReport, check_report
from core.infra.errors import ChunkLensError
from core.outputs.report_html import render_html
from core.outputs.report_summary import summary_sentences
from tests.support.data import ROOT

DEMO = ROOT / "docs" / "results" / "demo_reranked.json"
HEATMAP_TITLE = "Top-1 collisions: questions whose first hit comes from another document"
EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def report() -> dict:
    return json.loads(DEMO.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(report) -> str:
    return render_html(report)


def _table_after(page: str, heading: str) -> str:
    start = page.index(f"<h3>{heading}</h3>")
    return page[start:page.index("</table>", start)]


def _row_cells(table: str, spec: str) -> list[str]:
    """The cells after the chunker's name in its row, tags (bold) removed."""
    row = re.search(rf"<tr><td class='name'><code>{re.escape(html.escape(spec))}</code></td>(.*?)</tr>", table)
    assert row, f"no row for {spec}"
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]


def _summary(page: str, index: int = 1) -> str:
    match = re.search(rf"<section class='summary' id='summary-{index}'><h3>What this shows</h3><p>(.*?)</p>", page)
    assert match
    return html.unescape(match.group(1))


def test_every_chunker_is_in_the_table_with_its_hit_at_1_as_shown(report, page):
    table = _table_after(page, "Retrieval quality")
    header = re.findall(r"<th>(.*?)</th>", table)
    assert header[:3] == [f"hit@{k}" for k in report["k"]]
    mrr = f"mrr@{max(report['k'])}"
    for spec, r in report["results"].items():
        cells = _row_cells(table, spec)
        assert cells[0] == f"{r['hit@1']:.3f}"
        assert cells[header.index(mrr)] == f"{r[mrr]:.3f}"
    spans = _table_after(page, "Spans and collisions")
    for spec, r in report["results"].items():
        cells = _row_cells(spans, spec)
        assert f"{r['wrong_doc@10']:.3f}" in cells and f"{r['unread_share']:.3f}" in cells


def test_the_settings_and_versions_are_shown(report, page):
    settings = page[page.index("<h3>Settings and versions</h3>"):page.index("<h3>Chunkers</h3>")]
    assert f"<th>ChunkLens</th><td>{core.__version__}</td>" in settings
    assert f"<td>{html.escape(report['embedder'])}</td>" in settings
    assert f"<td>{html.escape(retrieval_phrase(BenchReport.of(report)))}</td>" in settings
    assert f"<td>{html.escape(report['dataset'])}</td>" in settings
    assert f"<td>{report['n_questions']} (product-named)</td>" in settings
    assert f"<td>{report['n_documents']} (joined into one stream)</td>" in settings
    assert "<td>1, 3, 10</td>" in settings
    chunkers = _table_after(page, "Chunkers")
    for spec, r in report["results"].items():
        assert html.escape(r["config"]) in _row_cells(chunkers, spec)


def test_plotly_js_is_inline_once_and_every_figure_is_drawn_from_the_file(report, page):
    assert "<script src=" not in page and "<link" not in page  # no script or stylesheet fetched from anywhere
    assert page.count("window.PlotlyConfig") == 1  # the bundle's preamble: plotly.js embedded once
    assert len(re.findall(r"plotly\.js v\d+\.\d+\.\d+", page)) == 1
    figures = re.findall(r'<div id="(figure-\d+)" class="plotly-graph-div"', page)
    assert figures == [f"figure-{i}" for i in range(1, 8)]  # hit, mrr, ndcg, spans, heat-map, wrong_doc, seconds
    assert page.count("Plotly.newPlot(") == len(figures)


def test_the_heat_map_holds_every_chunker_and_document(report, page):
    from core.evaluation.collisions import top1_collisions

    chunkers, docs, _ = top1_collisions(report)
    scripts = re.findall(r'Plotly\.newPlot\(\s*"(figure-\d+)",\s*(\[.*?\]),\s*\{', page, re.S)
    heat = [(div, json.loads(data)) for div, data in scripts if '"type":"heatmap"' in data]
    assert len(heat) == 1
    div, [trace] = heat[0]
    assert f'<div id="{div}"' in page and HEATMAP_TITLE in page
    assert trace["y"] == chunkers and trace["x"] == docs and len(docs) == 7


def test_what_this_shows_names_the_best_chunkers_from_the_numbers(report, page):
    results = report["results"]
    best_hit = max(results, key=lambda s: results[s]["hit@1"])
    worst_hit = min(results, key=lambda s: results[s]["hit@1"])
    best_mrr = max(results, key=lambda s: results[s]["mrr@10"])
    highest_wrong = max(results, key=lambda s: results[s]["wrong_doc@10"])
    text = _summary(page)
    assert f"By hit@1, {best_hit} is best with {results[best_hit]['hit@1']:.3f}" in text
    assert f"{worst_hit} is last with {results[worst_hit]['hit@1']:.3f}" in text
    spread = results[best_hit]["hit@1"] - results[worst_hit]["hit@1"]
    assert f"a spread of {spread:.3f}" in text
    assert f"By mrr@10, {best_mrr} is best" in text
    assert f"highest for {highest_wrong} ({results[highest_wrong]['wrong_doc@10']:.3f})" in text
    assert f"one question moves hit@k by {1 / report['n_questions']:.3f}" in text
    assert "The embedder never reads" in text  # several chunkers leave half their embedded text unread


def test_the_summary_follows_the_numbers_when_they_change(report):
    changed = copy.deepcopy(report)
    changed["results"]["cosine"]["hit@1"] = 0.99  # now the best at hit@1 (and nothing else)
    for r in changed["results"].values():
        r["unread_share"] = 0.0
    text = " ".join(summary_sentences(changed))
    assert "By hit@1, cosine is best with 0.990" in text and "embedder never reads" not in text
    best_mrr = max(changed["results"], key=lambda s: changed["results"][s]["mrr@10"])
    assert f"By mrr@10, {best_mrr} is best with" in text  # not "too": another chunker leads there


def test_the_same_report_gives_the_same_file_and_no_clock(report, page):
    assert render_html(report) == page
    assert "generated" not in page.split("<h3>Settings and versions</h3>")[1].split("</table>")[0]
    dated = render_html(report, generated="2026-12-03")
    assert "<th>generated</th><td>2026-12-03</td>" in dated


def test_names_from_specs_sets_and_documents_are_escaped(report):
    hostile = copy.deepcopy(report)
    hostile["dataset"] = EVIL
    hostile["results"] = {EVIL if spec == "chop" else spec: r for spec, r in hostile["results"].items()}
    hostile["results"][EVIL]["config"] = EVIL + ":size=500"
    for row in hostile["results"]["naive-500t"]["top1_sources"]:
        row[1] = "<img src=x onerror=alert(2)>" if row[1] == "fan-T12" else row[1]
    page = render_html(hostile)
    assert EVIL not in page and "<img src=x" not in page
    escaped = html.escape(EVIL)
    assert f"<code>{escaped}</code>" in page  # the chunker's row
    assert f"<h1>ChunkLens comparison: {escaped}</h1>" in page and f"<td>{escaped}</td>" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page or "\\u003cimg" in page


def test_a_list_of_reports_gives_one_section_each():
    from core.evaluation.report import load_reports

    reports = load_reports(ROOT / "docs" / "results" / "lexical_cost.json")
    assert len(reports) == 2
    page = render_html(reports)
    assert page.count("<section class='report'") == 2 and page.count("window.PlotlyConfig") == 1
    assert _summary(page, 1) and _summary(page, 2)
    assert len(set(re.findall(r'<div id="(figure-\d+)"', page))) == len(re.findall(r'<div id="(figure-\d+)"', page))


def test_a_report_without_per_question_sources_has_no_heat_map(report):
    plain = copy.deepcopy(report)
    for r in plain["results"].values():
        r.pop("top1_sources")
    page = render_html(plain)
    assert HEATMAP_TITLE not in page and "no top-1 collision heat-map" in page


@pytest.mark.parametrize("bad, message", [
    ({"a": 1}, "no 'results' and 'k'"),
    ({"k": [], "results": {"x": {}}}, "'k' is not a list of cut-offs"),
    ({"k": [1], "results": {}}, "no chunker results"),
    ({"k": [1], "results": {"x": {"hit@1": 0.5}}}, "'x' has no mrr@1"),
    ([], "an empty list"),
])
def test_what_is_not_a_bench_report_is_a_clear_error(bad, message):
    with pytest.raises(ChunkLensError, match=re.escape(message)):
        check_report(bad) if isinstance(bad, dict) else render_html(bad)


def test_the_app_draws_the_same_figures():
    from components import charts
    from core.outputs import figures

    for name in charts.__all__:
        assert getattr(charts, name) is getattr(figures, name)


def run_report(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "core", "report", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_the_command_writes_the_file(tmp_path, page):
    out = tmp_path / "sub" / "demo.html"
    proc = run_report(DEMO, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr.startswith(f"wrote {out} ("), proc.stderr
    assert out.read_text(encoding="utf-8") == page


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ('{"a": 1}', "not a bench report (no 'results')"),
    ("not json", "not a bench report"),
    ('{"k": [1], "results": {"x": {"hit@1": 0.5}}}', "not a bench report ('x' has no mrr@1)"),
])
def test_the_command_fails_in_one_line(tmp_path, content, message):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    proc = run_report(path, "--out", tmp_path / "out.html")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and message in proc.stderr and str(path) in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.html").exists()


def test_the_report_and_its_figures_need_no_streamlit():
    code = ("import sys, core.outputs.report_html, core.outputs.figures; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'components')))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_a_damaged_report_still_renders_what_it_can(report):
    damaged = copy.deepcopy(report)
    damaged["retrieval"] = "dense"
    damaged["results"]["chop"]["top1_sources"] = [["q1"], "x"]
    damaged["results"]["cosine"]["seconds"] = "soon"
    damaged["results"]["recursive"]["n_chunks"] = "<b>many</b>"
    page = render_html(damaged)
    assert HEATMAP_TITLE not in page and "<b>many" not in page and "&lt;b&gt;many" not in page
    # a count that is not a number reads as unknown (core.evaluation.results), and its row still renders
    assert "<code>recursive</code></td><td class='text'>recursive:theta=200</td><td>–</td>" in page
    assert "<th>retrieval</th><td>dense</td>" in page


def test_the_report_is_the_same_after_streamlit_set_its_plotly_template(page):
    """Streamlit, once imported, makes its own template Plotly's default: its colours are placeholders (#000001...)
    that only its front end fills in. The report names its template, so the app's download is the command's file."""
    import plotly.io as pio
    import streamlit.elements.plotly_chart  # noqa: F401  (registers and selects the "streamlit" template)

    before = pio.templates.default
    try:
        pio.templates.default = "streamlit"
        assert render_html(json.loads(DEMO.read_text(encoding="utf-8"))) == page
        assert "#000001" not in page
    finally:
        pio.templates.default = before
