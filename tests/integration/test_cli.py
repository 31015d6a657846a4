"""`python -m core bench`: the JSON contract, the table, and one clear line for every bad input."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.cli import run_cli
from tests.support.corpora import tiny_folder


@pytest.fixture()
def tiny(tmp_path):
    """Two short manuals and their questions."""
    return tiny_folder(tmp_path / "tiny")


@pytest.mark.slow
def test_bench_embeds_through_an_openai_compatible_embedding_server(tiny, tmp_path):
    """--embedder openai:<model> with --embedder-base-url reaches a real server on loopback (llama-cpp-python's,
    serving the bundled GGUF's embeddings) without any API key, and names that server in its cache key."""
    from tests.support.llm_server import llama_server

    out = tmp_path / "report.json"
    with llama_server(tmp_path, embedding=True) as server:
        env_key = os.environ.pop("OPENAI_API_KEY", None)
        try:
            proc = run_cli("bench", "--data", str(tiny), "--chunkers", "paragraph", "--k", "1,3", "--embedder",
                           "openai:smollm2", "--embedder-base-url", server.base_url, "--out", str(out),
                           workspace=tmp_path / "ws")
        finally:
            if env_key is not None:
                os.environ["OPENAI_API_KEY"] = env_key
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["embedder"] == "smollm2 (OpenAI-compatible)"
    result = report["results"]["paragraph"]
    assert result["n_chunks"] > 0 and 0.0 <= result["hit@3"] <= 1.0
    import sqlite3

    with sqlite3.connect(tmp_path / "ws" / "cache" / "embeddings.sqlite") as db:
        rows = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    assert rows >= result["n_chunks"]  # the server's vectors were cached like any embedder's


CONTRACT_KEYS = ("hit", "mrr", "ndcg", "dcg", "recall", "span_recall", "span_precision", "span_iou")


@pytest.mark.slow
def test_bench_writes_the_json_contract(tiny, tmp_path):
    out = tmp_path / "report.json"
    specs = "naive-500t:size=20:overlap=5,paragraph,sentence:max_tokens=30,cosine,semantic,recursive:theta=30"
    proc = run_cli("bench", "--data", str(tiny), "--chunkers", specs, "--k", "1,3", "--qualify-queries",
                   "--out", str(out), workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["dataset"] == "tiny" and report["embedder"].startswith("all-MiniLM-L6-v2")
    assert report["qualify_queries"] is True
    assert report["retrieval"]["mode"] == "hybrid" and report["retrieval"]["fusion"] == "rrf"
    assert list(report["results"]) == specs.split(",")
    for result in report["results"].values():
        for k in (1, 3):
            for key in CONTRACT_KEYS:
                assert 0.0 <= result[f"{key}@{k}"] <= (2.0 if key == "dcg" else 1.0)
        assert isinstance(result["n_chunks"], int) and result["n_chunks"] > 0
        assert result["mean_chunk_tokens"] > 0
        # the contract's four stages, plus building the lexical index in a lexical mode (the default: hybrid)
        assert set(result["seconds"]) == {"chunk", "embed", "index", "query", "lexical"}
        assert 0.0 <= result["wrong_doc@3"] <= 1.0 and len(result["top1_sources"]) == report["n_questions"]
        assert result["unread_share"] == 0.0  # every chunk of this small set fits the embedder's 256 pieces
    # these questions are easy: every chunker finds the paragraph in its top 3
    assert all(r["hit@3"] == 1.0 for r in report["results"].values())
    assert "paragraph" in proc.stdout and "hit@1" in proc.stdout
    table = run_cli("table", str(out), "--metrics", "dcg,recall", "--k", "3", workspace=tmp_path / "ws")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "| chunker | chunks | children | tokens | dcg@3 | recall@3 | wall s |" in lines
    assert sum(line.startswith("| `") for line in lines) == len(report["results"])
    row = next(line for line in lines if line.startswith("| `paragraph` |")).split(" | ")
    point, interval = row[4].split(" ", 1)  # '1.000 [1.00, 1.00]': the score and its 95% interval
    assert float(point) == pytest.approx(report["results"]["paragraph"]["dcg@3"], abs=5e-4)
    low, high = report["results"]["paragraph"]["dcg@3_ci95"]
    assert interval == f"[{low:.2f}, {high:.2f}]"
    # a second run reuses chunks and collections
    again = run_cli("bench", "--data", str(tiny), "--chunkers", "paragraph", "--k", "1", "--out", str(out),
                    workspace=tmp_path / "ws")
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["results"]["paragraph"]["cached"] == {"chunks": True, "collection": True,
                                                                             "lexical": True}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "/no/such/folder", "--chunkers", "paragraph"], "not a folder"),
        (["--chunkers", "nonsense"], "unknown chunker 'nonsense'"),
        (["--chunkers", "recursive:theta=abc"], "not a valid"),
        (["--chunkers", "recursive:size=3"], "has no parameter 'size'"),
        (["--chunkers", "naive-500t:size=100:overlap=100"], "overlap must be between 0 and 50 tokens"),
        (["--chunkers", "paragraph", "--chroma", "nonsense"], "HOST:PORT"),
        (["--chunkers", "paragraph", "--doc-ids", "ac,zzz"], "no document 'zzz'"),
        (["--chunkers", "paragraph", "--retrieval", "sparse"], "retrieval mode must be one of dense, bm25, hybrid"),
        (["--chunkers", "paragraph", "--fusion", "max"], "fusion must be one of rrf, weighted"),
        (["--chunkers", "paragraph", "--lexical-weight", "1.5"], "lexical weight must be between 0 and 1"),
        (["--chunkers", "paragraph", "--lexical-weight", "half"], "--lexical-weight takes a number"),
        (["--chunkers", "paragraph:prefix=toc"], "prefix must be one of none, title, headings"),
        (["--chunkers", "paragraph", "--sample-questions", "0"], "questions to sample must be at least 1"),
    ],
)
def test_bad_input_is_one_clear_line(tiny, tmp_path, args, message):
    if "--data" not in args:
        args = ["--data", str(tiny), *args]
    proc = run_cli("bench", *args, workspace=tmp_path / "ws")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") <= 1


def test_table_of_a_file_that_is_not_a_report(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"a": 1}')
    proc = run_cli("table", str(bad), workspace=tmp_path)
    assert proc.returncode == 2 and "not a bench report" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_k_is_an_argparse_error(tiny, tmp_path):
    proc = run_cli("bench", "--data", str(tiny), "--chunkers", "paragraph", "--k", "0,x", workspace=tmp_path)
    assert proc.returncode == 2 and "--k" in proc.stderr and "Traceback" not in proc.stderr


def test_chunkers_lists_the_registry(tmp_path):
    proc = run_cli("chunkers", workspace=tmp_path)
    assert proc.returncode == 0
    for name in ("naive-500t", "recursive", "paragraph", "sentence", "cosine", "semantic"):
        assert name in proc.stdout


def test_deeply_nested_json_in_a_set_is_one_clear_line(tiny, tmp_path):
    """A questions.jsonl line of 100 000 '[' (100 KB) overflows the JSON parser's recursion limit: that is a
    RecursionError, not a ValueError, so it used to end the command with a traceback."""
    (tiny / "questions.jsonl").write_text("[" * 100_000 + "\n")
    proc = run_cli("bench", "--data", str(tiny), "--chunkers", "paragraph", workspace=tmp_path / "ws")
    assert proc.returncode == 2, proc.stderr[-500:]
    assert "questions.jsonl:1: not valid JSON: nested too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0


def test_table_of_a_deeply_nested_file_is_one_clear_line(tmp_path):
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000)
    proc = run_cli("table", str(bad), workspace=tmp_path)
    assert proc.returncode == 2 and "not a bench report (not valid JSON: nested too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_question_sample_keeps_every_document_and_says_what_it_scored(tiny, tmp_path):
    from core.ingest.datasets import load_dataset

    whole = load_dataset(tiny)
    out = tmp_path / "report.json"
    proc = run_cli("bench", "--data", str(tiny), "--chunkers", "paragraph", "--k", "1", "--retrieval", "bm25",
                   "--sample-questions", "2", "--sample-seed", "5", "--out", str(out), workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["n_questions"] == 2 < len(whole.questions) and report["n_documents"] == len(whole.documents)
    assert report["question_sample"] == {"scored": 2, "of": len(whole.questions), "seed": 5,
                                         "stratified_by": "document"}
    assert len(report["results"]["paragraph"]["per_question"]["hit@1"]) == 2
