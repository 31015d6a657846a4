"""`bench --cnm-examples` refuses an examples file it cannot use in one line and exit status 2, before any slow
work (issue 50): an example for a manual that `--max-docs` (or `--doc-ids`) leaves out of the run ended the command
in a traceback once the chunkers had run, and so could a category of 90 KB (a CNM tag's part holds 120
characters)."""

from __future__ import annotations

import json

import pytest

from core.__main__ import main
from core.methods.chop.cnm import MAX_FIELD_CHARS
from core.workbench import sample_folder


@pytest.fixture()
def bench(tmp_path, monkeypatch, capsys):
    """`python -m core bench` on the sample set with an examples file, through the command line's main function:
    (exit status, stderr)."""
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))

    def run(examples: dict, *flags: str) -> tuple[int, str]:
        path = tmp_path / "examples.json"
        path.write_text(json.dumps(examples))
        status = main(["bench", "--data", str(sample_folder()), "--chunkers", "chop", "--cnm-backend", "rule",
                       "--cnm-examples", str(path), *flags])
        return status, capsys.readouterr().err

    return run


def test_an_example_outside_max_docs_is_one_line(bench, tmp_path):
    status, err = bench({"camera-X100": {"category": "camera"}}, "--max-docs", "2")
    assert status == 2
    assert err == (f"error: {tmp_path / 'examples.json'}: no document 'camera-X100' among the 2 documents this run "
                   "benchmarks (--max-docs or --doc-ids leaves it out)\n")


def test_an_example_outside_doc_ids_is_one_line(bench):
    status, err = bench({"camera-X100": {"model": "X100"}}, "--doc-ids", "fan-F30")
    assert status == 2 and "no document 'camera-X100' among the 1 documents this run benchmarks" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_90_kb_category_is_one_line(bench, tmp_path):
    status, err = bench({"fan-F30": {"category": "fan " * 22_500}})
    assert status == 2
    assert err == (f"error: {tmp_path / 'examples.json'}: the category of 'fan-F30' is 89,999 characters, over the "
                   f"{MAX_FIELD_CHARS} a CNM tag's part may hold\n")


def test_a_long_model_is_one_line_too(bench):
    status, err = bench({"fan-F30": {"category": "fan", "model": "F" * (MAX_FIELD_CHARS + 1)}})
    assert status == 2 and f"the model of 'fan-F30' is 121 characters, over the {MAX_FIELD_CHARS}" in err
