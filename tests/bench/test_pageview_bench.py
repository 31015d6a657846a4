"""`python -m bench.pageview` on a small PDF of three pages: it prints and writes the page view's figures (the page
view itself: tests/unit/test_pageview.py)."""

from __future__ import annotations

import json

from bench import pageview as bench_pageview
from tests.support.pdfs import make_pdf


def test_the_page_view_benchmark_prints_and_writes_its_figures(tmp_path, capsys):
    pdf = tmp_path / "three.pdf"
    pdf.write_bytes(make_pdf(["Clean the filter every month.", "Replace the battery.", "Call the service line."]))
    out = tmp_path / "pageview.json"
    assert bench_pageview.main(["--pdf", str(pdf), "--repeat", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["pages"] == 3 and figures["first_page_boxes"] == 1 and figures["target_s"] == 1.0
    assert figures["cached_page_median_s"] > 0 and 0 < figures["other_pages_median_s"] <= figures["other_pages_max_s"]
    assert "page 1, first draw" in capsys.readouterr().out
