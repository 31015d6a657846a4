"""Chroma's chunking evaluation beside ours: Precision_Omega, `retrieve=-1`, means per corpus and the
`--protocol chroma` preset, against cases computed by hand from the rules of Chroma's base_evaluation.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli.flags import build_parser
from core.cli.protocol import apply_protocol
from core.evaluation.chroma import (
    EVIDENCE_CAP,
    EvidenceIndex,
    corpus_of,
    evidence_scores,
    per_corpus,
    precision_omega,
)
from core.evaluation.metrics import span_scores
from core.evaluation.published import load_published, published_table
from core.infra.errors import ChunkLensError
from core.schema.spans import Span


def S(start: int, end: int, doc: str = "a") -> Span:
    return Span(doc, start, end)


def test_precision_omega_counts_overlapping_chunks_characters_once():
    """Two overlapping chunks hold a 10-character reference: the denominator is their union (0..25, 25
    characters), not the sum of their lengths (15 + 20 = 35), so Precision_Omega is 10/25, not 10/35."""
    chunks = [S(0, 15), S(5, 25), S(40, 60)]
    assert precision_omega(chunks, [S(10, 20)]) == pytest.approx(10 / 25)


def test_precision_omega_is_not_retrieval_precision_over_the_same_chunks():
    """Precision over retrieved chunks sums their lengths (overlap counted twice, as Chroma's code does), while
    Precision_Omega takes their union: the same two chunks give two different figures."""
    chunks, refs = [S(0, 15), S(5, 25)], [S(10, 20)]
    assert span_scores(chunks, refs).precision == pytest.approx(10 / 35)
    assert precision_omega(chunks, refs) == pytest.approx(10 / 25)


def test_precision_omega_adds_the_evidence_no_chunk_covers_and_ignores_other_documents():
    """The reference 10..20 is covered 10..15 by a chunk; 15..20 no chunk holds (a chunker dropped it): the
    denominator is the chunk and that uncovered part (0..20), so 5/20. A chunk of another document at the same
    offsets changes nothing."""
    chunks = [S(0, 15), S(15, 60, "b"), S(30, 40)]
    assert precision_omega(chunks, [S(10, 20)]) == pytest.approx(5 / 20)


def test_a_chunk_that_only_touches_a_reference_holds_evidence_as_in_chroma():
    """Chroma's intersect_two_ranges takes start <= end: a chunk ending where the reference starts (0..10) and one
    starting where it ends (20..30) both count, and join the denominator: 10 / 30. A chunk one character away
    (31..40) does not."""
    index = EvidenceIndex([S(0, 10), S(10, 20), S(20, 30), S(31, 40)])
    found = index.evidence([S(10, 20)])
    assert found.chunks == 3
    assert found.precision_omega == pytest.approx(10 / 30)


def test_precision_omega_over_several_references_and_documents():
    """References in two documents: numerators and denominators add up over the documents."""
    chunks = [S(0, 10), S(10, 20), S(0, 50, "b")]
    refs = [S(2, 8), S(12, 14), S(10, 20, "b")]
    # doc a: 0..10 holds 2..8 and 10..20 holds 12..14 (neither meets the other's): 6 + 2 of 20; doc b: 10 of 50
    found = EvidenceIndex(chunks).evidence(refs)
    assert found.chunks == 3
    assert found.precision_omega == pytest.approx((6 + 2 + 10) / (20 + 50))


def test_no_chunk_covering_any_evidence_gives_zero():
    assert precision_omega([S(100, 200)], [S(0, 10)]) == 0.0
    assert precision_omega([], [S(0, 10)]) == 0.0


def test_retrieve_minus_one_scores_as_many_chunks_as_hold_evidence():
    """Two chunks hold the evidence, so only the first two retrieved are scored: a wrong one (100..200) and
    0..15, which covers 5 of the 10 characters; the third retrieved (15..30, the rest) is not read."""
    index = EvidenceIndex([S(0, 15), S(15, 30), S(100, 200)])
    got = evidence_scores(index, [S(10, 20)], [S(100, 200), S(0, 15), S(15, 30)])
    assert got["evidence_chunks"] == 2
    assert got["span_recall_evidence"] == pytest.approx(0.5)
    assert got["span_precision_evidence"] == pytest.approx(5 / 115)
    assert got["span_iou_evidence"] == pytest.approx(5 / (115 + 5))
    assert got["span_precision_omega"] == pytest.approx(10 / 30)


def test_retrieve_minus_one_reads_at_most_twenty_chunks():
    chunks = [S(i, i + 1) for i in range(30)]
    index = EvidenceIndex(chunks)
    got = evidence_scores(index, [S(0, 30)], chunks)
    assert got["evidence_chunks"] == 30 and EVIDENCE_CAP == 20
    assert got["span_recall_evidence"] == pytest.approx(20 / 30)


def test_per_corpus_means_intervals_and_corpus_names():
    per_question = {"span_recall@5": [1.0, 0.0, 0.5], "hit@5": [1.0, 0.0, 1.0]}
    out = per_corpus(["pubmed", "finance", "pubmed"], per_question,
                     lambda picked: {f"{m}_ci95": [min(v), max(v)] for m, v in picked.items()})
    assert list(out) == ["pubmed", "finance"]
    assert out["pubmed"]["n_questions"] == 2 and out["pubmed"]["span_recall@5"] == pytest.approx(0.75)
    assert out["pubmed"]["span_recall@5_std"] == pytest.approx(0.25)  # numpy's population std, as Chroma's
    assert "hit@5_std" not in out["pubmed"] and out["finance"]["hit@5_ci95"] == [0.0, 0.0]
    assert corpus_of([S(0, 1, "b"), S(0, 1, "a"), S(3, 4, "a")]) == "a+b"


def _bench_args(*flags: str):
    return build_parser().parse_args(["bench", "--data", "x", "--chunkers", "naive-500t", *flags])


def test_protocol_chroma_is_dense_search_no_reranker_five_chunks():
    args = apply_protocol(_bench_args("--protocol", "chroma"))
    assert (args.retrieval, args.rerank, args.k, args.join, args.qualify_queries) == ("dense", "none", [5], False,
                                                                                      False)
    assert apply_protocol(_bench_args("--protocol", "chroma", "--k", "5,10", "--retrieval", "dense")).k == [5, 10]


def test_protocol_default_is_the_bench_as_it_was():
    args = apply_protocol(_bench_args())
    assert args.protocol == "default" and args.k == [1, 3, 5, 10]
    assert args.retrieval is None and args.rerank is None and args.join is False


@pytest.mark.parametrize(("flags", "line"), [
    (("--retrieval", "hybrid"), "--protocol chroma runs --retrieval dense; drop --retrieval hybrid"),
    (("--rerank", "maxsim"), "--protocol chroma runs --rerank none; drop --rerank maxsim"),
    (("--join",), "drop --join"),
    (("--qualify-queries",), "the questions as written; drop --qualify-queries"),
])
def test_protocol_chroma_refuses_a_flag_that_changes_its_setting(flags, line):
    with pytest.raises(ChunkLensError, match=line):
        apply_protocol(_bench_args("--protocol", "chroma", *flags))


PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "results" / "chroma_published.json"


def _report() -> dict:
    result = {"span_recall@5": 0.8, "span_recall@5_ci95": [0.78, 0.84], "span_recall_std@5": 0.3,
              "span_precision@5": 0.05, "span_iou@5": 0.05, "span_precision_omega": 0.2,
              "span_precision_omega_ci95": [0.19, 0.21], "span_precision_omega_std": 0.1, "hit@5": 1.0,
              "mrr@5": 1.0, "n_chunks": 3, "mean_chunk_tokens": 250.0, "seconds": {"chunk": 0.1},
              "per_corpus": {"pubmed": {"n_questions": 2, "span_recall@5": 0.9, "span_recall@5_ci95": [0.8, 1.0],
                                        "span_precision_omega": 0.3}}}
    return {"dataset": "chroma_eval", "n_questions": 2, "n_documents": 1, "k": [5],
            "embedder": "all-MiniLM-L6-v2 (truncate@256 word pieces)", "retrieval": {"mode": "dense"},
            "results": {"naive-500t:size=250:overlap=125": result}}


def test_the_published_fixture_holds_sourced_figures_with_their_mapping():
    fixture = load_published(PUBLISHED)
    assert fixture["report"]["url"] == "https://research.trychroma.com/evaluating-chunking"
    rows = {row["name"]: (table, row) for table in fixture["tables"] for row in table["rows"]}
    table, minilm = rows["TokenTextSplitter_250_125"]
    assert table["embedder"] == "all-MiniLM-L6-v2" and minilm["recall"] == [0.824]
    assert minilm["chunklens"] == "naive-500t:size=250:overlap=125"
    assert len(next(t for t in fixture["tables"] if t["id"] == "notebook-openai-large")["rows"]) == 12
    for table in fixture["tables"]:
        assert table["source"].startswith("https://") and table["read_from"]
        for row in table["rows"]:
            for figure in ("recall", "precision", "precision_omega", "iou"):
                assert all(0.0 <= x <= 1.0 for x in row.get(figure) or [])


def test_every_mapped_spec_parses():
    from core.chunkers.registry import make_chunker

    specs = {row["chunklens"] for t in load_published(PUBLISHED)["tables"] for row in t["rows"] if row["chunklens"]}
    assert "langchain-recursive:chunk_size=200:chunk_overlap=0:length=tokens" in specs
    for spec in specs:
        make_chunker(spec)


def test_the_renderer_prints_our_rows_and_the_published_ones_beside_them():
    text = published_table(_report(), load_published(PUBLISHED), 5)
    lines = text.splitlines()
    ours = next(line for line in lines if line.startswith("| `naive-500t:size=250:overlap=125` | ChunkLens"))
    assert "0.800 [0.78, 0.84] ± 0.30" in ours and "0.200 [0.19, 0.21] ± 0.10" in ours
    assert "| ↳ TokenTextSplitter_250_125 | Chroma, report | all-MiniLM-L6-v2 | 0.824 | - | - | - |" in lines
    assert any(line.startswith("| RecursiveTokenChunker_200_0 | Chroma, notebook | text-embedding-3-large | "
                               "0.896 ± 0.28 | 0.071 ± 0.06 | 0.299 ± 0.18 | 0.071 ± 0.06 |") for line in lines)
    assert ("- `naive-500t:size=250:overlap=125`: Chroma's recall 0.824 (all-MiniLM-L6-v2, TokenTextSplitter_250_125) "
            "lies inside ChunkLens's 95 % interval [0.780, 0.840] (mean 0.800).") in lines
    report = _report()
    report["results"]["naive-500t:size=400:overlap=0"] = {**report["results"].pop("naive-500t:size=250:overlap=125"),
                                                          "span_recall@5_ci95": [0.6, 0.7]}
    text = published_table(report, load_published(PUBLISHED), 5)
    # Precision_Omega needs no embedder: the notebook's (text-embedding-3-large) is held against ours; its recall
    # is not, and a figure off our interval says so
    assert ("- `naive-500t:size=400:overlap=0`: Chroma's Precision_Omega 0.125 (text-embedding-3-large, "
            "FixedTokenChunker_400_0) lies outside ChunkLens's 95 % interval [0.190, 0.210] (mean 0.200).") in text
    assert "Chroma's recall 0.892" not in text
    assert "research.trychroma.com/evaluating-chunking" in text and "Not found:" in text


def test_the_markdown_table_shows_means_per_corpus_under_it():
    from core.evaluation.report import markdown_table
    from core.evaluation.results import BenchReport

    text = markdown_table(BenchReport.of(_report()), ["span_recall"], [5])
    assert text.index("| `naive-500t:size=250:overlap=125` | 3 |") < text.index("Per corpus")
    assert "| `naive-500t:size=250:overlap=125` | pubmed | 2 | 0.900 [0.80, 1.00] | 0.300 |" in text


def test_a_file_that_is_not_a_fixture_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"tables": 3}')
    with pytest.raises(ChunkLensError, match="not a fixture of published figures"):
        load_published(bad)


def test_results_index_section_renders_published_rows_the_report_and_chosen_pairs(tmp_path):
    import json
    import shutil

    from core.evaluation.report import render_results

    report = _report()
    report["results"]["naive-500t:size=250:overlap=125"]["span_recall@5"] = 0.8
    report["pairs"] = [{"a": "x", "b": "y", "metric": m, "diff": 0.1, "ci95": [0.05, 0.15], "p": 0.001,
                        "p_holm": 0.002, "significant": True} for m in ("span_recall@5", "hit@5")]
    (tmp_path / "chroma_protocol.json").write_text(json.dumps(report))
    shutil.copy(PUBLISHED, tmp_path / "chroma_published.json")
    (tmp_path / "index.json").write_text(json.dumps({"sections": [
        {"title": "Beside Chroma", "command": "python -m core bench --protocol chroma", "kind": "published",
         "report": "chroma_protocol.json", "published": "chroma_published.json", "metrics": ["span_recall"],
         "k": [5], "pair_metrics": ["span_recall@5"]}]}))
    text = render_results(tmp_path)
    assert text.index("| ↳ TokenTextSplitter_250_125 | Chroma, report |") < text.index("| chunker | chunks |")
    assert "Per corpus" in text and "- span_recall@5: " in text and "- hit@5: " not in text
