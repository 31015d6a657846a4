"""`python -m bench.significance`: what intervals and paired tests cost, on a made-up table or a real report."""

from __future__ import annotations

import json

from bench.significance import from_report, main, measure, synthetic


def test_the_made_up_table_has_a_real_runs_shape():
    table = synthetic(3, 20)
    assert list(table) == ["chunker-0", "chunker-1", "chunker-2"]
    scores = table["chunker-0"]
    assert len(scores) == 12 and all(len(v) == 20 for v in scores.values())
    assert set(scores["hit@1"]) <= {0.0, 1.0} and all(0 <= v <= 1 for v in scores["mrr@10"])
    assert all(m <= h for m, h in zip(scores["mrr@10"], scores["hit@10"]))  # a reciprocal rank only where found


def test_it_times_both_parts_and_reads_a_report(tmp_path, capsys):
    table = synthetic(2, 10)
    seconds = measure(table, (1, 3, 10), False, repeat=1)
    assert set(seconds) == {"intervals", "pairs"} and all(s > 0 for s in seconds.values())
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"k": [1, 3, 10], "results": {s: {"per_question": v} for s, v in table.items()}}))
    assert from_report(path) == (table, [1, 3, 10], False)
    main(["--report", str(path), "--repeat", "1"])
    out = capsys.readouterr().out
    assert "2 chunkers x 10 questions x 12 metrics, 1 pairs on 4 headline metrics" in out and "total" in out
