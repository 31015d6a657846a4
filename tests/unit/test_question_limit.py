"""Every question is held to MAX_QUESTION_CHARS (issue 39, item 9): asked on Query, answered by the chat model,
judged, imported in a judged zip, read from a QA set or generated. A 1 MB question took 53 s to embed and search;
now it is one line naming the limit, before any embedding, search or request."""

from __future__ import annotations

import io
import json
import time
import zipfile
from types import SimpleNamespace

import pytest

from core.evaluation.questions import looks_like_question
from core.infra.errors import DatasetError
from core.ingest.datasets import MAX_QUESTION_CHARS, load_dataset
from core.ingest.judged import read_zip
from core.ingest.library import Library
from core.schema.spans import Span
from core.workbench import answer_each, ask_all

LONG = "How do I clean the filter " + "again and " * 100_000 + "?"  # about 1 MB
LIMIT = f"{len(LONG):,} characters, over the {MAX_QUESTION_CHARS:,}-character limit"


class Untouchable:
    """An embedder or chat model that fails the test if anything reaches it."""

    label = "untouchable"

    def __getattr__(self, name: str):
        raise AssertionError(f"{name} was called for a question over the limit")


def test_a_1_mb_question_is_refused_before_anything_is_embedded_or_searched():
    services = SimpleNamespace(embedder=Untouchable(), chat=Untouchable())
    started = time.perf_counter()
    with pytest.raises(DatasetError, match=LIMIT):
        ask_all(services, {}, LONG, 5)
    with pytest.raises(DatasetError, match=LIMIT):
        answer_each(services, {}, LONG)
    assert time.perf_counter() - started < 1.0
    assert ask_all(services, {}, "x" * MAX_QUESTION_CHARS, 5) == {}  # at the limit: asked (nothing ran here)


def test_a_judgment_of_a_question_over_the_limit_is_refused(tmp_path):
    lib = Library(tmp_path / "uploads", "limitlib1")
    lib.add([("fan.md", b"# Fan\n\nClean the filter monthly with warm water.")])
    [doc] = lib.documents()
    with pytest.raises(DatasetError, match=LIMIT):
        lib.judged.record(LONG, Span(doc.doc_id, 0, 10), None, lib.documents())
    assert lib.judged.questions() == []


def qa_lines(question: str) -> tuple[str, str]:
    corpus = json.dumps({"doc_id": "a", "title": "A", "text": "Clean the filter monthly."}) + "\n"
    questions = json.dumps({"qid": "1", "question": question,
                            "references": [{"doc_id": "a", "start": 0, "end": 16}]}) + "\n"
    return corpus, questions


def test_a_judged_zip_or_qa_set_holding_a_question_over_the_limit_is_one_line_naming_it(tmp_path):
    corpus, questions = qa_lines(LONG)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("set/corpus.jsonl", corpus)
        zf.writestr("set/questions.jsonl", questions)
    with pytest.raises(DatasetError, match=f"questions.jsonl:1: {LIMIT}"):
        read_zip(buf.getvalue(), 2**24)
    (tmp_path / "corpus.jsonl").write_text(corpus)
    (tmp_path / "questions.jsonl").write_text(questions)
    with pytest.raises(DatasetError, match=f"questions.jsonl:1: {LIMIT}"):
        load_dataset(tmp_path)
    corpus, questions = qa_lines("How do I clean the filter?")
    (tmp_path / "questions.jsonl").write_text(questions)
    assert [q.question for q in load_dataset(tmp_path).questions] == ["How do I clean the filter?"]


def test_a_generated_question_over_the_limit_is_not_kept():
    padded = "How do I " + " ".join(["clean" + "e" * 60] * 40) + "?"  # 60 words, but over 2,000 characters
    assert len(padded.split()) <= 60 and len(padded) > MAX_QUESTION_CHARS
    assert not looks_like_question(padded)
    assert looks_like_question("How do I clean the filter?")
