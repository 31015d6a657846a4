"""Metric unit tests against cases computed by hand."""

from __future__ import annotations

import math

import pytest

from core.evaluation import metrics as M
from core.evaluation.relevance import aggregate, evaluate, score_question
from core.schema.spans import Span


def S(start: int, end: int, doc: str = "a") -> Span:
    return Span(doc, start, end)


def test_relevance_needs_half_of_the_shorter_span_and_the_same_document():
    ref = S(100, 200)
    assert M.is_relevant(S(150, 400), ref)  # 50 of the shorter (100) overlap
    assert not M.is_relevant(S(151, 400), ref)  # 49 < 50
    assert M.is_relevant(S(0, 1000), S(10, 20))  # a long chunk holding a short reference
    assert not M.is_relevant(S(100, 200, "b"), ref)


def test_rank_metrics_by_hand():
    rel = [False, True, False, True]
    assert M.hit_at_k(rel, 1) == 0.0 and M.hit_at_k(rel, 2) == 1.0
    assert M.mrr_at_k(rel, 4) == 0.5 and M.mrr_at_k(rel, 1) == 0.0
    # DCG@4 = 1/log2(3) + 1/log2(5)
    assert M.dcg_at_k(rel, 4) == pytest.approx(1 / math.log2(3) + 1 / math.log2(5))
    # two relevant chunks in the index: ideal = 1/log2(2) + 1/log2(3)
    assert M.ndcg_at_k(rel, 4, 2) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert M.ndcg_at_k([True], 1, 3) == 1.0  # ideal capped at k
    assert M.ndcg_at_k([False], 1, 0) == 0.0


def test_chunk_recall_counts_references_found():
    refs = [S(0, 10), S(500, 520)]
    retrieved = [S(0, 15), S(900, 950), S(505, 530)]
    assert M.recall_at_k(retrieved, refs, 1) == 0.5
    assert M.recall_at_k(retrieved, refs, 3) == 1.0


def test_span_scores_follow_chroma_definition():
    # reference 100 chars [100, 200); chunks [50, 150) and [140, 240) (overlapping each other), one foreign chunk
    refs = [S(100, 200)]
    retrieved = [S(50, 150), S(140, 240), S(100, 200, "b")]
    s = M.span_scores(retrieved, refs)
    # covered = union([100,150), [140,200)) = 100 chars; retrieved sum = 100 + 100 + 100 = 300
    assert s.recall == 1.0
    assert s.precision == pytest.approx(100 / 300)
    assert s.iou == pytest.approx(100 / (300 + 0))
    # half covered: reference [0, 100), chunk [50, 80): covered 30, unused 70 -> IoU 30 / (30 + 70)
    s = M.span_scores([S(50, 80)], [S(0, 100)])
    assert (s.recall, s.precision, s.iou) == (pytest.approx(0.3), 1.0, pytest.approx(0.3))
    # two references, chunk covers parts of both: covered 10 + 10, unused 40 + 40, chunk length 100
    s = M.span_scores([S(40, 140)], [S(0, 50), S(130, 180)])
    assert s.recall == pytest.approx(20 / 100)
    assert s.precision == pytest.approx(20 / 100)
    assert s.iou == pytest.approx(20 / (100 + 80))


def test_span_scores_with_nothing_retrieved():
    assert M.span_scores([], [S(0, 10)]) == (0.0, 0.0, 0.0)


def test_interval_helpers():
    assert M.union([(5, 10), (0, 3), (2, 6)]) == [(0, 10)]
    assert M.subtract([(0, 10)], (3, 5)) == [(0, 3), (5, 10)]
    assert M.subtract([(0, 10)], (0, 10)) == []


def test_evaluate_aggregates_means_and_std():
    refs = [("q1", [S(0, 10)]), ("q2", [S(100, 110)])]
    index = [S(0, 50), S(50, 100), S(100, 150)]
    retrieved = [[S(0, 50), S(50, 100)], [S(0, 50), S(100, 150)]]
    agg, per_q = evaluate(refs, retrieved, index, [1, 2])
    assert agg["hit@1"] == 0.5 and agg["hit@2"] == 1.0
    assert agg["mrr@2"] == pytest.approx((1 + 0.5) / 2)
    assert per_q[1].relevant == [False, True] and per_q[1].n_relevant == 1
    # span recall@1: q1 fully covered (1.0), q2 nothing (0.0): mean .5, std .5
    assert agg["span_recall@1"] == 0.5 and agg["span_recall_std@1"] == 0.5
    assert agg["span_precision@1"] == pytest.approx((10 / 50 + 0) / 2)


def test_score_question_keys_cover_the_bench_contract():
    keys = set(score_question("q", [S(0, 5)], [S(0, 5)], 1, [3]).values)
    assert keys == {f"{m}@3" for m in ("hit", "mrr", "ndcg", "dcg", "recall", "span_recall", "span_precision",
                                      "span_iou", "wrong_doc")}
    assert aggregate([], [3]) == {}


def test_wrong_doc_is_the_share_of_hits_from_documents_without_gold():
    assert M.wrong_doc_at_k(["a", "b", "b", "a"], {"a"}, 4) == 0.5
    assert M.wrong_doc_at_k(["a", "b", "b", "a"], {"a"}, 1) == 0.0
    assert M.wrong_doc_at_k(["b", "c"], {"a", "c"}, 10) == 0.5  # over the hits returned, not k
    assert M.wrong_doc_at_k([], {"a"}, 5) == 0.0
    # a question whose references lie in two documents: hits from either are not collisions
    q = score_question("q", [S(0, 5, "x"), S(0, 5, "y"), S(0, 5, "z")], [S(0, 5, "x"), S(9, 12, "y")], 2, [2, 3])
    assert q.values["wrong_doc@2"] == 0.0 and q.values["wrong_doc@3"] == pytest.approx(1 / 3)


def test_wrong_doc_in_a_joined_stream_follows_the_segments():
    from core.evaluation.relevance import source_resolver
    from core.ingest.documents import join_documents
    from core.schema.documents import Document

    stream = join_documents([Document("a", "A", "x" * 100), Document("b", "B", "y" * 100)])
    source = source_resolver([stream])
    b_start = stream.segments[1].start
    assert source(Span("stream", 0, 50)) == "a" and source(Span("stream", b_start + 10, b_start + 40)) == "b"
    # a chunk across the join belongs to the segment holding its midpoint
    assert source(Span("stream", b_start - 10, b_start + 30)) == "b"
    gold = [Span("stream", 10, 20)]
    q = score_question("q", [Span("stream", 0, 50), Span("stream", b_start, b_start + 50)], gold, 1, [2], source)
    assert q.values["wrong_doc@2"] == 0.5
    # without the resolver every hit of a stream is "the same document"
    assert score_question("q", [Span("stream", b_start, b_start + 50)], gold, 1, [1]).values["wrong_doc@1"] == 0.0
