"""`python -m bench.scale` on a tiny size (one sample manual, 1x and 2x; collections of 500 and 1,000 tiled vectors on
both store paths), and the pieces it builds its work from: repeated documents and tiled chunks keep the span
contract under unique ids."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from bench import scale as bs
from core.chunkers.registry import make_chunker
from core.ingest.datasets import load_dataset
from core.pipeline import chunk_documents
from core.schema.chunks import check_spans
from tests.support.data import ROOT, shared_dataset

SAMPLE = ROOT / "sample_data" / "qa"
TINY = ["--data", str(SAMPLE), "--fraction", "0.01", "--scales", "1,2", "--sizes", "500,1000", "--questions", "5",
        "--stores", "embedded,server"]


@pytest.mark.slow
def test_tiny_run_reports_growth_and_latency_on_both_stores(tmp_path, capsys):
    out = tmp_path / "scale.json"
    report = bs.main([*TINY, "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    inp = report["input"]
    assert inp["documents"] == 1 and inp["documents_in_set"] == 7 and inp["questions"] == 5 and inp["k"] == 5
    assert inp["chunker"].startswith("recursive") and inp["vector_cache"] is False
    assert report["machine"]["cpu_count"] >= 1 and report["query_embedding"]["p50_ms"] > 0

    one, two = report["growth"]["scales"]
    assert (one["scale"], two["scale"]) == (1, 2) and (one["documents"], two["documents"]) == (1, 2)
    assert one["doc_ids_unique"] and two["doc_ids_unique"]
    assert two["mb"] == pytest.approx(2 * one["mb"], rel=0.01) and two["chars"] == 2 * one["chars"]
    assert two["chunks"] == 2 * one["chunks"] > 10  # the repeat is the same text: exactly twice the chunks
    for row in (one, two):
        assert all(row["seconds"][s] > 0 for s in ("chunking", "embedding", "indexing"))
        q = row["query"]
        assert q["questions"] == 5 and q["fewest_hits"] == 5 and 0 < q["p50_ms"] <= q["p95_ms"] <= q["max_ms"]
        assert row["peak_rss_mb"] > 0
    # no vector cache: the repeat's texts are computed again (a cache would answer all of them in milliseconds)
    assert two["seconds"]["embedding"] > 0.5 * one["seconds"]["embedding"]
    fit = report["growth"]["fit_against_mb"]
    assert fit["embedding"]["seconds_per_mb"] > 0 and set(fit) >= {"chunking", "embedding", "indexing", "total"}

    runs = report["latency"]["runs"]
    assert [(r["store"], r["size"]) for r in runs] == [("embedded", 500), ("server", 500), ("embedded", 1000),
                                                       ("server", 1000)]
    for r in runs:
        q = r["query"]
        assert q["questions"] == 5 and q["fewest_hits"] == 5 and 0 < q["p50_ms"] <= q["p95_ms"] <= q["max_ms"]
        assert r["build_seconds"] > 0 and r["disk_mb"] > 0 and r["rss_mb"] > 0
        assert r["self_top1"] >= 0.8  # stored vectors find themselves: the collection holds what was written
    latency = report["latency"]
    assert latency["base_vectors"] == one["index_units"] and 0.8 < latency["noise_cosine_to_original"] < 1.0
    assert set(latency["fit"]) == {"embedded", "server"}
    assert all(f["p50_ratio_largest_to_smallest"] > 0 for f in latency["fit"].values())

    served = [r for r in runs if r["store"] == "server"]  # each answered by a `chroma run` child of its own, now gone
    assert all(r["server_start_seconds"] > 0 and r["rss_of"] == "the chroma server process" for r in served)
    assert len({r["server_port"] for r in served}) == 2 and "server_port" not in report["growth"]
    for r in served:
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", r["server_port"]), timeout=1):
            pass
    assert "--chroma HOST:PORT" in report["scale_out"]["vector_store"]
    assert "--embedder openai:<model>" in report["scale_out"]["embedding"]
    assert "work growth" in printed and "query latency against collection size" in printed and "scale out" in printed


def test_repeated_documents_keep_the_text_under_unique_ids():
    docs = load_dataset(shared_dataset("emanual_galaxy")).documents
    assert len(bs.kept_documents(docs, 0.01)) == 1 and len(bs.kept_documents(docs, 0.5)) == len(docs) // 2
    four = bs.repeated_documents(docs, 4)
    assert len(four) == 4 * len(docs) and len({d.doc_id for d in four}) == len(four)
    assert four[:len(docs)] == docs and {d.doc_id for d in four[-len(docs):]} == {d.doc_id + "-r4" for d in docs}
    assert [d.text for d in four[len(docs):2 * len(docs)]] == [d.text for d in docs]
    assert bs.text_mb(four) == pytest.approx(4 * bs.text_mb(docs))
    with pytest.raises(Exception, match="fraction"):
        bs.kept_documents(docs, 0)


def test_tiled_chunks_are_spans_of_renamed_copies_and_vectors_are_unit_and_seeded():
    from dataclasses import replace

    from core.schema.documents import Document

    doc = Document("manual", "Manual", " ".join(f"Sentence {i} about the remote control." for i in range(300)))
    base = chunk_documents([doc], make_chunker("recursive")).chunks
    n = 3 * len(base) + 2
    chunks = bs.tiled_chunks(base, n)
    assert len(chunks) == n and len({c.chunk_id for c in chunks}) == n
    assert all(len(c.text) <= bs.TILE_TEXT_CHARS for c in chunks)
    copies = [replace(doc, doc_id=f"manual-t{c}") for c in range(4)]
    check_spans(chunks, copies)  # each is exactly its span of a copy of the document

    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((len(base), 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tiled = bs.tiled_vectors(vectors, n, 0.02, seed=0)
    assert tiled.shape == (n, 16) and np.allclose(np.linalg.norm(tiled, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(tiled, bs.tiled_vectors(vectors, n, 0.02, seed=0))
    same = np.sum(tiled[len(base):2 * len(base)] * vectors, axis=1)
    assert same.min() > 0.9 and same.max() < 1.0  # near the original, never an exact duplicate
    assert bs.linear_fit([1, 2, 4], [3, 5, 9]) == pytest.approx({"slope": 2.0, "intercept": 1.0, "r2": 1.0})
    assert bs.linear_fit([1, 1], [3, 5]) is None
