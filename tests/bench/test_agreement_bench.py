"""`python -m bench.agreement` (bench/agreement.py): two question sets over the same documents compared end to end,
on the sample set against a slice of its own questions (the rankings by hand: tests/unit/test_agreement.py)."""

from __future__ import annotations

import json
import shutil

from core.evaluation.agreement import agreement_lines, agreement_table, ranking_agreement
from core.ingest.datasets import load_dataset, questions_jsonl
from core.workbench import sample_folder


def test_the_bench_compares_two_sets_over_the_same_documents(tmp_path, sample_vectors):
    from bench.agreement import main
    from tests.support.world import seed_workspace

    sample = load_dataset(sample_folder())
    generated = tmp_path / "generated"
    generated.mkdir()
    shutil.copy(sample_folder() / "corpus.jsonl", generated / "corpus.jsonl")
    (generated / "questions.jsonl").write_bytes(questions_jsonl(sample.questions[::3]))
    (generated / "README.md").write_text("every third question of the sample set\n")
    out = tmp_path / "agreement.json"
    ws = seed_workspace(tmp_path / "ws", sample_vectors)  # the sample set's vectors, computed once per test run
    assert main(["--gold", str(sample_folder()), "--generated", str(generated), "--chunkers",
                 "naive-500t,recursive", "--qualify", "--workspace", str(ws),
                 "--out", str(out)]) == 0
    study = json.loads(out.read_text())
    assert set(study["agreement"]) == {"mrr@10", "hit@5"}
    assert len(study["documents"]) == 7 and study["generated_readme"].startswith("every third")
    for m, a in study["agreement"].items():
        gold = {c: r[m] for c, r in study["gold"]["results"].items()}
        got = {c: r[m] for c, r in study["generated"]["results"].items()}
        assert a == ranking_agreement(gold, got)
    assert "Kendall's tau-b" in agreement_table(study)
    assert study["label"] == "generated" and study["gold_set"] == "qa"
    shutil.copy(out, tmp_path / "agreement_sample.json")
    (tmp_path / "agreement_broken.json").write_text("{")
    [line] = agreement_lines(tmp_path)
    a = study["agreement"]["mrr@10"]
    assert line.startswith("generated on qa: Kendall's tau ") and ("the same" if a["top1_agree"] else "not the same") \
        in line
    # a generated set over other text is refused in one line
    (generated / "corpus.jsonl").write_text(json.dumps({"doc_id": sample.documents[0].doc_id, "text": "other"})
                                            + "\n")
    (generated / "questions.jsonl").write_text(json.dumps({"question": "q", "references": [
        {"doc_id": sample.documents[0].doc_id, "start": 0, "end": 3}]}) + "\n")
    assert main(["--gold", str(sample_folder()), "--generated", str(generated), "--workspace",
                 str(tmp_path / "ws")]) == 2
