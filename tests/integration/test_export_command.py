"""`python -m core export` as a child process: a plain folder of manuals to chunks in JSONL, and one clear line for
an output file of another kind or a folder with nothing to read (the export itself: tests/unit/test_export.py)."""

from __future__ import annotations

import json

from tests.support.cli import run_cli


def test_the_export_command_writes_a_plain_folder_and_refuses_other_suffixes(tmp_path):
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "fan.md").write_text("# Fan F30\n\nClean the blades monthly.\n\n## Timer\n\nSet the timer.", "utf-8")
    (folder / "cam.txt").write_text("Charge the X100 battery for three hours.", "utf-8")
    out = tmp_path / "chunks.jsonl"
    proc = run_cli("export", "--data", str(folder), "--chunkers", "paragraph,chop", "--out", str(out),
                   workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {ln["metadata"]["doc_id"] for ln in lines} == {"fan", "cam"}
    assert {ln["metadata"]["chunker"] for ln in lines} == {"paragraph", "chop"}
    bad = run_cli("export", "--data", str(folder), "--chunkers", "paragraph", "--out", str(tmp_path / "x.txt"),
                  workspace=tmp_path / "ws")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --out must end in .jsonl or .csv (got 'x.txt')"
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run_cli("export", "--data", str(empty), "--chunkers", "paragraph", "--out", str(out),
                   workspace=tmp_path / "ws")
    assert none.returncode == 2 and "no corpus.jsonl" in none.stderr and "Traceback" not in none.stderr
