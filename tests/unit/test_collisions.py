"""The collision views' data, by hand: where each chunker's hits come from, and top-1 collisions per document."""

from __future__ import annotations

import pytest

from core.evaluation.collisions import question_grid, top1_collisions, top1_sources
from core.evaluation.relevance import source_resolver
from core.ingest.documents import join_documents
from core.schema.documents import Document
from core.schema.spans import Span


def test_question_grid_marks_the_gold_document_and_counts_collisions():
    rows = question_grid({"naive": [Span("b", 0, 5), Span("a", 0, 5), Span("c", 0, 5), Span("b", 9, 12)],
                          "chop": [Span("a", 0, 5), Span("a", 7, 9)]}, [Span("a", 1, 3)])
    assert [r.chunker for r in rows] == ["naive", "chop"]
    assert rows[0].sources == ["b", "a", "c", "b"] and rows[0].gold == [False, True, False, False]
    assert rows[0].wrong_doc == 0.75 and rows[1].wrong_doc == 0.0
    unscored = question_grid({"naive": [Span("b", 0, 5)]}, [])  # a typed question: nothing is marked
    assert unscored[0].gold == [False] and unscored[0].wrong_doc == 0.0


def test_grid_of_a_joined_stream_names_its_segments():
    stream = join_documents([Document("a", "A", "x" * 50), Document("b", "B", "y" * 50)])
    b = stream.segments[1].start
    rows = question_grid({"chop": [Span("stream", b, b + 20)]}, [Span("stream", 0, 10)], source_resolver([stream]))
    assert rows[0].sources == ["b"] and rows[0].wrong_doc == 1.0


def test_top1_collisions_per_chunker_and_gold_document():
    refs = [[Span("a", 0, 1)], [Span("a", 0, 1)], [Span("b", 0, 1)], []]
    got = [[Span("a", 0, 9)], [Span("b", 0, 9)], [Span("b", 5, 9)], [Span("a", 0, 1)]]
    rows = top1_sources(["q1", "q2", "q3", "q4"], refs, got)
    assert rows == [["q1", "a", "a"], ["q2", "a", "b"], ["q3", "b", "b"], ["q4", None, "a"]]
    report = {"results": {"naive": {"top1_sources": rows},
                          "chop": {"top1_sources": [["q1", "a", "a"], ["q2", "a", "a"], ["q3", "b", None]]},
                          "old": {}}}  # a report written before the field existed is left out
    chunkers, docs, matrix = top1_collisions(report)
    assert chunkers == ["naive", "chop"] and docs == ["a", "b"]
    assert matrix == [[pytest.approx(0.5), 0.0], [0.0, 1.0]]  # nothing retrieved counts as a collision
