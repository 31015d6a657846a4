"""`page` through the command line: `core export` carries each chunk's page (1..36 for the real 36-page manual) and
prints one line for the text file beside it; `core bench` prints the same kind of line and keeps it in the report
(`chunker_notes`)."""

from __future__ import annotations

import json
import shutil

from tests.support.cli import run_cli
from tests.support.corpora import tiny_folder
from tests.support.data import ROOT

LINE = "page: '{}' has no pages (only a PDF has them); kept whole as one chunk"


def test_export_gives_each_page_its_chunk_and_says_the_text_file_has_no_pages(tmp_path):
    folder = tmp_path / "manuals"
    folder.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf", folder)
    (folder / "notes.txt").write_text("Charge the X100 battery for three hours.\n", "utf-8")
    out = tmp_path / "chunks.jsonl"
    proc = run_cli("export", "--data", str(folder), "--chunkers", "page", "--out", str(out),
                   workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    assert LINE.format("notes.txt") in proc.stderr.splitlines()
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    pdf = [ln["metadata"] for ln in lines if ln["metadata"]["doc_id"] == "libtasn1"]
    assert [(m["page"], m["page_end"]) for m in pdf] == [(n, n) for n in range(1, 37)]
    text = [ln for ln in lines if ln["metadata"]["doc_id"] == "notes"]
    assert [ln["page_content"] for ln in text] == ["Charge the X100 battery for three hours."]
    assert "page" not in text[0]["metadata"]


def test_bench_prints_the_line_and_keeps_it_in_the_report(tmp_path):
    tiny = tiny_folder(tmp_path / "tiny")
    out = tmp_path / "report.json"
    proc = run_cli("bench", "--data", str(tiny), "--chunkers", "page,paragraph", "--k", "1", "--out", str(out),
                   workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())["results"]
    notes = results["page"]["chunker_notes"]
    assert len(notes) == 2 and all(n.endswith("has no pages (only a PDF has them); kept whole as one chunk")
                                   for n in notes)
    assert results["page"]["n_chunks"] == 2 and results["paragraph"]["chunker_notes"] == []
    assert [ln for ln in proc.stderr.splitlines() if "has no pages" in ln] == [f"page: {n}" for n in notes]
