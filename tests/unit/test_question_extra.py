"""A question's other fields (`Question.extra`) are JSON as the set's line held them: the span lists read from them
are narrowed to spans, and anything else is one DatasetError line or read as absent, never a TypeError."""

from __future__ import annotations

import pytest

from core.infra.errors import DatasetError
from core.ingest.datasets import extra_spans
from core.schema.questions import Question
from core.schema.spans import Span


def _question(**extra) -> Question:
    return Question("q1", "Where?", (Span("d", 0, 4),), extra=extra)


def test_a_span_list_reads_as_spans():
    q = _question(not_relevant=[{"doc_id": "d", "start": 5, "end": 9}])
    assert extra_spans(q, "not_relevant") == (Span("d", 5, 9),)
    assert extra_spans(_question(), "not_relevant") == ()


@pytest.mark.parametrize("value", [None, "d 5-9", {"doc_id": "d"}])
def test_a_value_that_is_no_list_reads_as_absent(value):
    assert extra_spans(_question(not_relevant=value), "not_relevant") == ()


@pytest.mark.parametrize("item", ["d 5-9", {"doc_id": "d", "start": 5}, {"doc_id": 3, "start": 5, "end": 9},
                                  {"doc_id": "d", "start": True, "end": 9}])
def test_an_item_that_is_no_span_is_one_dataset_error(item):
    with pytest.raises(DatasetError, match="'not_relevant' holds something that is not a span"):
        extra_spans(_question(not_relevant=[item]), "not_relevant")
