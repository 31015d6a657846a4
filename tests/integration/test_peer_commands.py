"""`python -m core bench` and `python -m core export` with every peer chunker on the bundled sample set, in a child
process whose network is unreachable (tests/support/offline.py): the bench JSON carries the two fidelity keys for
every chunker and every peer library's version, and each exported page_content is exactly its span."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.chunkers.peers import PEER_LIBRARIES, PeerChunker, peer_versions
from core.chunkers.registry import REGISTRY
from core.ingest.datasets import load_dataset
from tests.support.data import ROOT
from tests.support.offline import OFFLINE_SITE

PEERS = ["langchain-recursive", "langchain-recursive:length=tokens:chunk_size=500:chunk_overlap=100", "semchunk",
         "text-splitter", "chonkie-recursive", "chonkie-semantic", "llamaindex-sentence", "llamaindex-semantic",
         "docling-hierarchical", "docling-hybrid"]
#: peers that keep text out of their chunks: Docling keeps headings in metadata (docs/PEERS.md)
DROPS_HEADINGS = ("docling-hierarchical", "docling-hybrid")
SAMPLE = ROOT / "sample_data" / "qa"
#: both commands read the sample set's first manuals only: every peer embeds its own chunks in the bench, and the
#: semantic peers every sentence in both, so the whole set would take minutes
BENCH_DOCS = "2"


def first_manuals(folder, n: int = int(BENCH_DOCS)):
    """A qa-spans copy of the sample set's first `n` manuals and the questions about them."""
    docs = [json.loads(line) for line in (SAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()][:n]
    ids = {d["doc_id"] for d in docs}
    questions = [line for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if {r["doc_id"] for r in json.loads(line)["references"]} <= ids]
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(q + "\n" for q in questions), encoding="utf-8")
    return folder


def offline_cli(*args: str, workspace) -> subprocess.CompletedProcess[str]:
    """The CLI with the network unreachable and Hugging Face's offline switches off, over an empty Hugging Face
    cache: a library that reached for the hub (Docling's tokenizer, Chonkie's, LlamaIndex's NLTK data) would fail."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update({"CHUNKLENS_WORKSPACE": str(workspace), "HF_HOME": str(workspace.parent / "hf"),
                "PYTHONPATH": f"{OFFLINE_SITE}{os.pathsep}{ROOT}"})
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)


def test_every_registered_peer_is_run_here():
    assert {spec.split(":")[0] for spec in PEERS} == {
        name for name, cls in REGISTRY.items() if issubclass(cls, PeerChunker)}


@pytest.mark.slow
def test_bench_runs_every_peer_offline_and_reports_fidelity_and_versions(tmp_path):
    out = tmp_path / "report.json"
    specs = [*PEERS, "recursive"]
    proc = offline_cli("bench", "--data", str(SAMPLE), "--chunkers", ",".join(specs), "--k", "1,10",
                       "--max-docs", BENCH_DOCS, "--out", str(out), workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["peer_versions"] == peer_versions() and set(report["peer_versions"]) == set(PEER_LIBRARIES)
    assert list(report["results"]) == specs
    for spec, result in report["results"].items():
        assert 0.0 <= result["hit@10"] <= 1.0 and result["hit@10_ci95"][0] <= result["hit@10"]
        if spec.startswith(DROPS_HEADINGS):
            assert 0.0 < result["dropped_chars_share"] < 0.1
        else:
            assert result["dropped_chars_share"] == 0.0  # these libraries keep every non-space character
        assert result["altered_chunks_share"] == (None if spec == "recursive" else 0.0)


def test_export_gives_each_peer_chunk_exactly_its_span_offline(tmp_path):
    out = tmp_path / "chunks.jsonl"
    data = first_manuals(tmp_path / "qa")
    proc = offline_cli("export", "--data", str(data), "--chunkers", ",".join(PEERS), "--out", str(out),
                       workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    texts = {d.doc_id: d.text for d in load_dataset(data).documents}
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {line["metadata"]["chunker"] for line in lines} == set(PEERS)
    for line in lines:
        m = line["metadata"]
        assert line["page_content"] == texts[m["doc_id"]][m["start"] : m["end"]]
