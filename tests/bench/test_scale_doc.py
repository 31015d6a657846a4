"""docs/SCALE.md's tables are the committed Ray report's (`python -m bench.scale_doc`), and the 100,000-manual
budget is the arithmetic its text says."""

from __future__ import annotations

import json

import pytest

from bench import scale_doc
from tests.support.data import ROOT

REPORT = ROOT / "docs" / "results" / "scale_ray.json"
DOC = ROOT / "docs" / "SCALE.md"


def test_scale_md_carries_the_committed_reports_tables():
    rendered = scale_doc.render(json.loads(REPORT.read_text()))
    document = DOC.read_text()
    for block in scale_doc.BLOCKS:
        assert scale_doc.rendered_block(document, block) == rendered[block], (
            "docs/SCALE.md is stale: run python -m bench.scale_doc docs/results/scale_ray.json --write docs/SCALE.md")


def _row(workers, vps, cps, seconds=10.0):
    return {"workers": workers, "vectors_per_second": vps, "chunks_per_second": cps, "chunking_seconds": 1.0,
            "embedding_seconds": seconds, "documents_per_second": 1.0}


def test_the_budget_reads_the_largest_scales_fastest_run():
    small = {"scale": 1, "documents": 10, "chunks": 1_000, "ray": [_row(1, 25.0, 500.0), _row(2, 50.0, 900.0)]}
    large = {"scale": 8, "documents": 80, "chunks": 8_000, "ray": [_row(2, 40.0, 800.0), _row(1, 20.0, 400.0)]}
    ray = {"scales": [small, large]}
    budget = scale_doc.Budget.of(ray)
    assert (budget.chunks_per_manual, budget.vectors_per_second, budget.chunks_per_second) == (100.0, 40.0, 800.0)
    assert (budget.workers, budget.scale) == (2, 8)
    embed, chunk = budget.hours(10)
    assert embed == pytest.approx(scale_doc.MANUALS * 100 / (10 * 40.0) / 3600)
    assert chunk == pytest.approx(scale_doc.MANUALS * 100 / (10 * 800.0) / 3600)


def test_write_replaces_only_what_is_between_the_markers(tmp_path):
    doc = tmp_path / "SCALE.md"
    (s_begin, s_end), (b_begin, b_end) = scale_doc.markers("stages"), scale_doc.markers("budget")
    doc.write_text(f"# Title\n\nbefore\n{s_begin}\nold table\n{s_end}\nbetween\n"
                   f"{b_begin}\nold budget\n{b_end}\nafter\n")
    scale_doc.main([str(REPORT), "--write", str(doc)])
    text = doc.read_text()
    assert text.startswith("# Title\n\nbefore\n") and text.endswith(f"{b_end}\nafter\n")
    assert f"{s_end}\nbetween\n{b_begin}" in text
    assert "old table" not in text and "old budget" not in text
    rendered = scale_doc.render(json.loads(REPORT.read_text()))
    assert all(scale_doc.rendered_block(text, b) == rendered[b] for b in scale_doc.BLOCKS)
