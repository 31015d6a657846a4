"""`--sample-questions N` at scale (`core.ingest.datasets.sample_questions`): every document stays in the store,
N questions are drawn stratified by document with a seed (the same draw every time, another seed another draw),
and a bad N is one line."""

from __future__ import annotations

from collections import Counter

import pytest

from core.infra.errors import DatasetError
from core.ingest.datasets import load_dataset, sample_questions
from tests.support.data import ROOT


@pytest.fixture(scope="module")
def sample_set():
    return load_dataset(ROOT / "sample_data" / "qa")


def by_document(ds) -> Counter:
    return Counter(q.references[0].doc_id for q in ds.questions)


def test_a_sample_keeps_every_document_and_each_ones_share_of_the_questions(sample_set):
    drawn = sample_questions(sample_set, 21, seed=3)
    assert drawn.documents == sample_set.documents  # the store holds the whole library, collisions included
    assert len(drawn.questions) == 21 and "21 of 56 questions, seed 3" in drawn.name
    whole, part = by_document(sample_set), by_document(drawn)
    assert set(part) == set(whole)
    for doc, n in whole.items():  # 21/56 of each document's questions, rounded by largest remainder
        assert abs(part[doc] - n * 21 / len(sample_set.questions)) < 1
    order = [q.qid for q in sample_set.questions]
    assert [q.qid for q in drawn.questions] == sorted((q.qid for q in drawn.questions), key=order.index)


def test_the_same_seed_draws_the_same_questions_and_another_seed_others(sample_set):
    first = [q.qid for q in sample_questions(sample_set, 14, seed=7).questions]
    assert first == [q.qid for q in sample_questions(sample_set, 14, seed=7).questions]
    assert first != [q.qid for q in sample_questions(sample_set, 14, seed=8).questions]


def test_a_sample_as_large_as_the_set_is_the_set_and_a_bad_size_is_one_line(sample_set):
    assert sample_questions(sample_set, 56) is sample_set and sample_questions(sample_set, 500) is sample_set
    with pytest.raises(DatasetError, match="at least 1"):
        sample_questions(sample_set, 0)
