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


def test_a_folder_of_your_own_manuals_is_measured_against_its_gold_file(tmp_path, capsys):
    """Made-up board pages uploaded from a folder (titles only in their file names and their underlined
    headings), with a gold file keyed by file name: every model right, the type they state found."""
    import json

    folder = tmp_path / "boards"
    folder.mkdir()
    gold = {}
    for code in ("K4", "K4-P", "K7"):
        title = f"Brandco Quasar {code}"
        body = f"The Quasar {code} board has three LEDs. Connect the board to a computer. " * 8
        name = f"quasar_{code.lower().replace('-', '_')}.md"
        (folder / name).write_text(f"{title}\n{'=' * len(title)}\n\n{body}", encoding="utf-8")
        gold[name] = {"category": "board", "model": f"Quasar {code}"}
    (tmp_path / "gold.json").write_text(json.dumps(gold), encoding="utf-8")
    main(["--sets", "", "--folder", str(folder), "--gold", str(tmp_path / "gold.json")])
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.startswith("folder:boards"))
    assert line.split()[1:3] == ["3", "3"] and line.count("1.00 / 0.00 / 0.00") == 2  # category and model
    with pytest.raises(SystemExit):
        main(["--folder", str(folder)])  # a folder needs its gold file
