"""`python -m core bench --protocol chroma` on a two-manual set: Chroma's setting and its added keys in the JSON,
the table's per-corpus lines, and the default protocol's report without them."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run_cli
from tests.support.corpora import tiny_folder

SPECS = "naive-500t:size=20:overlap=5,paragraph"


@pytest.mark.slow
def test_bench_protocol_chroma_writes_chroma_figures_and_per_corpus(tmp_path):
    data, out = tiny_folder(tmp_path / "tiny"), tmp_path / "chroma.json"
    proc = run_cli("bench", "--data", str(data), "--chunkers", SPECS, "--protocol", "chroma", "--out", str(out),
                   workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["protocol"] == "chroma" and report["k"] == [5] and report["evidence_cap"] == 20
    assert report["retrieval"] == {"mode": "dense"}  # no BM25, no reranker
    for result in report["results"].values():
        for key in ("span_recall@5", "span_precision@5", "span_iou@5", "span_precision_omega",
                    "span_recall_evidence", "span_precision_evidence", "span_iou_evidence"):
            assert 0.0 <= result[key] <= 1.0
            assert len(result[f"{key}_ci95"]) == 2 and key in result["per_question"]
        assert result["span_precision_omega_std"] >= 0.0
        assert 0.0 < result["span_precision_omega"] <= 1.0  # every reference lies inside some chunk
        assert set(result["per_corpus"]) == {"ac", "cam"}
        assert result["per_corpus"]["ac"]["n_questions"] == 2 and result["per_corpus"]["cam"]["n_questions"] == 1
        assert "span_precision_omega_ci95" in result["per_corpus"]["ac"]
    assert {p["metric"] for p in report["pairs"]} >= {"span_precision_omega", "span_iou_evidence", "span_iou@5"}
    table = run_cli("table", str(out), "--metrics", "span_recall,span_precision,span_iou",
                    workspace=tmp_path / "ws")
    assert table.returncode == 0, table.stderr
    assert "| `paragraph` | cam | 1 |" in table.stdout  # the per-corpus table under the main one

    plain = tmp_path / "default.json"
    proc = run_cli("bench", "--data", str(data), "--chunkers", SPECS, "--out", str(plain), workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    default = json.loads(plain.read_text())
    assert default["k"] == [1, 3, 5, 10] and "protocol" not in default
    assert all("per_corpus" not in r and "span_recall_evidence" not in r for r in default["results"].values())
    assert {p["metric"] for p in default["pairs"]} == {"hit@1", "hit@10", "mrr@10", "wrong_doc@10", "span_recall@10"}


def test_bench_protocol_chroma_refuses_hybrid_in_one_line(tmp_path):
    data = tiny_folder(tmp_path / "tiny")
    proc = run_cli("bench", "--data", str(data), "--chunkers", "paragraph", "--protocol", "chroma",
                   "--retrieval", "hybrid", workspace=tmp_path / "ws")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].endswith("--protocol chroma runs --retrieval dense; "
                                                         "drop --retrieval hybrid")
