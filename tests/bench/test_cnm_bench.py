"""`python -m bench.cnm`: right / wrong / unknown shares of CNM tags per set, here on the Debian PDFs (no
../shared needed)."""

from __future__ import annotations

import pytest

from bench.cnm import main, study, text


def test_the_debian_manuals_are_tagged_right_and_the_table_says_so(capsys):
    report = study(["debian"], "extract")
    debian = report["results"]["debian"]
    assert debian["documents"] == 2 and debian["chunks"] > 20
    assert debian["category"] == {"right": 1.0, "wrong": 0.0, "unknown": 0.0} == debian["model"]
    assert "debian" in text(report) and "1.00 / 0.00 / 0.00" in text(report)
    # where each part came from: the titles named the models, the opening lines described the product types
    assert debian["by_source"]["model"] == {"title": {"right": debian["chunks"], "wrong": 0, "unknown": 0}}
    assert report["by_source"]["description"]["right"] == debian["chunks"]
    assert "description" in text(report) and "1.000" in text(report)


def test_an_unknown_set_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--sets", "debian,nope"])
    assert exc.value.code == 2
    assert "unknown set(s) nope" in capsys.readouterr().err
