"""The embedder study (`core.evaluation.embedder_choice`): the same chunkers under two embedders, paired per
question; the default moves only when no pair is significant on any set, and reports that cannot be paired are
refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.embedder_choice import main
from core.evaluation.embedder_choice import embedder_study, fast_setting_cost, paired_set, study_table
from core.infra.errors import ChunkLensError

N = 60


def report(embedder: str, hits: dict[str, np.ndarray]) -> dict:
    """A bench report as `core bench` writes it, cut down to what the study reads."""
    results = {}
    for chunker, h in hits.items():
        per_question = {"hit@1": h.tolist(), "hit@10": h.tolist(), "mrr@10": h.tolist(),
                        "wrong_doc@10": (1 - h).tolist(), "span_recall@10": h.tolist()}
        results[chunker] = {**{m: float(np.mean(v)) for m, v in per_question.items()}, "per_question": per_question}
    return {"embedder": embedder, "k": [1, 10], "qids": [f"q{i}" for i in range(N)], "retrieval": {"mode": "hybrid"},
            "qualify_queries": False, "dataset": "toy", "results": results}


def coin(seed: int, rate: float = 0.5) -> np.ndarray:
    return (np.random.default_rng(seed).random(N) < rate).astype(float)


def test_the_same_answers_under_both_embedders_switch_the_default():
    base = {"a": coin(1), "b": coin(2)}
    s = paired_set("toy", report("old", base), report("new", {k: v.copy() for k, v in base.items()}))
    study = embedder_study("old", "new", [s])
    assert study["switch"] and not study["significant_pairs"] and study["largest_loss"] is None
    assert study["pairs_compared"] == 2 * 5
    assert "`new` is the default" in study_table(study)


def test_a_real_loss_on_one_set_keeps_the_old_default_and_names_the_pair():
    good = coin(3, 0.9)
    worse = good.copy()
    worse[: 25] = 0.0  # 25 of 60 questions lost, every other equal
    even = {"b": coin(4)}
    sets = [paired_set("first", report("old", even), report("new", {"b": even["b"].copy()})),
            paired_set("second", report("old", {"a": good}), report("new", {"a": worse}))]
    study = embedder_study("old", "new", sets)
    assert not study["switch"]
    lost = {(p["set"], p["metric"]) for p in study["significant_pairs"]}
    assert ("second", "hit@1") in lost and all(s == "second" for s, _ in lost)
    hit1 = next(p for p in sets[1]["pairs"] if p["metric"] == "hit@1")
    assert hit1["diff"] == pytest.approx((worse.sum() - good.sum()) / N)
    assert hit1["worse"] and hit1["ci95"][1] < 0
    wrong = next(p for p in sets[1]["pairs"] if p["metric"] == "wrong_doc@10")
    assert wrong["diff"] > 0 and wrong["worse"]  # more wrong-manual hits is a loss
    line = study_table(study).splitlines()[-1]
    assert "`old` stays the default" in line and "`new` is the fast setting" in line and "second" in line


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(qids=list(reversed(r["qids"]))), "same questions"),
    (lambda r: r.update(k=[1, 5]), "different k"),
    (lambda r: r.update(retrieval={"mode": "dense"}), "different retrieval"),
    (lambda r: r.update(embedder="old"), "same embedder"),
    (lambda r: r.update(results={"other": r["results"]["a"]}), "share no chunker"),
])
def test_reports_that_cannot_be_paired_are_refused_in_one_line(change, message):
    new = report("new", {"a": coin(5)})
    change(new)
    with pytest.raises(ChunkLensError, match=message):
        paired_set("toy", report("old", {"a": coin(5)}), new)


def test_the_command_writes_the_study_the_app_quotes(tmp_path, capsys):
    base = {"a": coin(6)}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(report("old", base)))
    new.write_text(json.dumps(report("new", base)))
    assert main(["--old", "old", "--new", "new", "--pair", "toy", str(old), str(new),
                 "--out", str(tmp_path / "embedder_choice.json")]) == 0
    assert "| toy | 60 | `a` |" in capsys.readouterr().out
    study = json.loads((tmp_path / "embedder_choice.json").read_text())
    assert study["reports"] == [{"set": "toy", "old": "old.json", "new": "new.json"}]
    assert fast_setting_cost(tmp_path) == study_table(study).splitlines()[-1]
    assert fast_setting_cost(tmp_path / "nowhere") is None
    new.write_text("{not json")
    assert main(["--old", "old", "--new", "new", "--pair", "toy", str(old), str(new)]) == 2


def test_the_committed_study_comes_out_the_same_from_its_reports():
    from tests.support.data import ROOT

    folder = ROOT / "docs" / "results"
    committed = json.loads((folder / "embedder_choice.json").read_text(encoding="utf-8"))
    sets = [paired_set(r["set"], json.loads((folder / r["old"]).read_text(encoding="utf-8")),
                       json.loads((folder / r["new"]).read_text(encoding="utf-8"))) for r in committed["reports"]]
    again = embedder_study(committed["old"], committed["new"], sets)
    assert json.loads(json.dumps({**again, "reports": committed["reports"]})) == committed
