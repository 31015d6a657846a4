"""`python -m bench.probe` replays the shared-server review's hostile inputs, each in a capped child process; every
check must hold on this build (each fails on the code before the hardening it checks)."""

from __future__ import annotations

import json

from bench.probe import CHECKS, main


def test_every_probe_check_holds_in_its_capped_process(tmp_path, capsys):
    out = tmp_path / "probe.json"
    status = main(["--json", str(out)])
    printed = capsys.readouterr().out
    outcomes = json.loads(out.read_text())
    assert [o["check"] for o in outcomes] == list(CHECKS)
    assert status == 0, printed
    assert printed.count("PASS") == len(CHECKS)
