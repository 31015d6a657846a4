"""qa-spans v1 folders: loading, checking, product-qualified questions, joined streams."""

from __future__ import annotations

import pytest

from core.infra.errors import DatasetError
from core.ingest.datasets import first_documents, joined, load_dataset, select_documents
from tests.support.corpora import write_folder
from tests.support.data import SHARED_DATA, shared_dataset

DOCS = [{"doc_id": "a", "title": "A", "text": "Filter every two weeks."},
        {"doc_id": "b", "title": "B", "text": "Battery charges in three hours."}]
QS = [{"qid": "1", "question": "How long to charge?", "answer": "three hours", "product": "Cam X",
       "references": [{"doc_id": "b", "start": 19, "end": 30}]}]


def test_load_and_join(tmp_path):
    ds = load_dataset(write_folder(tmp_path / "ok", DOCS, QS))
    q = ds.questions[0]
    assert q.text() == "How long to charge?" and q.text(qualify=True) == "Cam X: How long to charge?"
    stream = joined(ds)
    doc = stream.documents[0]
    (ref,) = stream.questions[0].references
    assert doc.text[ref.start : ref.end] == "three hours" == ds.documents[1].text[19:30]
    assert doc.joins == [len(DOCS[0]["text"]) + 2]


def test_slices_keep_only_questions_about_their_documents(tmp_path):
    qa = {**QS[0], "qid": "2", "references": [{"doc_id": "a", "start": 0, "end": 6}]}
    both = {**QS[0], "qid": "3", "references": [{"doc_id": "a", "start": 0, "end": 6},
                                                {"doc_id": "b", "start": 0, "end": 7}]}
    ds = load_dataset(write_folder(tmp_path / "ok", DOCS, [*QS, qa, both]))
    first = first_documents(ds, 1)
    assert [d.doc_id for d in first.documents] == ["a"] and [q.qid for q in first.questions] == ["2"]
    assert first.name == "ok (first 1 documents)"
    assert first_documents(ds, 5) is ds
    picked = select_documents(ds, ["b"])
    assert [d.doc_id for d in picked.documents] == ["b"] and [q.qid for q in picked.questions] == ["1"]
    with pytest.raises(DatasetError, match="no document 'zzz'"):
        select_documents(ds, ["zzz"])
    with pytest.raises(DatasetError, match="at least 1"):
        first_documents(ds, 0)


@pytest.mark.parametrize(
    ("docs", "questions", "message"),
    [
        ([], QS, "no documents"),
        (DOCS, [], "no questions"),
        (DOCS, [{**QS[0], "references": [{"doc_id": "zzz", "start": 0, "end": 1}]}], "unknown doc_id"),
        (DOCS, [{**QS[0], "references": [{"doc_id": "a", "start": 5, "end": 999}]}], "outside"),
        (DOCS, [{**QS[0], "references": []}], "non-empty 'references'"),
        ([DOCS[0], DOCS[0]], QS, "duplicate doc_id"),
    ],
)
def test_bad_folders_name_the_problem(tmp_path, docs, questions, message):
    with pytest.raises(DatasetError, match=message):
        load_dataset(write_folder(tmp_path / "bad", docs, questions))


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(DatasetError, match="not a folder"):
        load_dataset(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="missing"):
        load_dataset(tmp_path / "empty")
    folder = write_folder(tmp_path / "broken", DOCS, QS)
    (folder / "questions.jsonl").write_text('{"qid": 1,\n')
    with pytest.raises(DatasetError, match=r"questions.jsonl:1: not valid JSON"):
        load_dataset(folder)


@pytest.mark.parametrize("name", ["chroma_eval", "covid_qa", "emanual_galaxy"])
def test_shared_sets_load_with_exact_spans(name):
    ds = load_dataset(shared_dataset(name))
    assert ds.questions and ds.documents
    assert SHARED_DATA.exists()


def test_sample_set_matches_its_manuals_and_is_big_enough():
    from core.chunkers.registry import make_chunker
    from tests.support.data import ROOT

    ds = load_dataset(ROOT / "sample_data" / "qa")
    assert len(ds.documents) >= 6 and len(ds.questions) >= 40
    chunker = make_chunker("recursive")
    for doc in ds.documents:
        assert (ROOT / "sample_data" / "manuals" / f"{doc.doc_id}.md").read_text(encoding="utf-8") == doc.text
        assert len(chunker.chunk(doc).chunks) >= 20
    assert all(q.product for q in ds.questions)


@pytest.mark.parametrize(
    ("question", "corpus_doc", "message"),
    [
        ({"answer": 42}, {}, r"questions.jsonl:1: 'answer' must be a string, not a number"),
        ({"answer": ["three", "hours"]}, {}, r"questions.jsonl:1: 'answer' must be a string, not a list"),
        ({"product": {"name": "Cam X"}}, {}, r"questions.jsonl:1: 'product' must be a string, not an object"),
        ({"question": 7}, {}, r"questions.jsonl:1: needs a string 'question'"),
        ({"qid": [1]}, {}, r"questions.jsonl:1: 'qid' must be a string or a whole number, not a list"),
        ({"references": [{"doc_id": 5, "start": 0, "end": 1}]}, {}, r"questions.jsonl:1: a reference needs doc_id \(a"),
        ({"references": [{"doc_id": "b", "start": "19", "end": 30}]}, {}, r"questions.jsonl:1: a reference needs"),
        ({"references": ["b:19-30"]}, {}, r"questions.jsonl:1: a reference needs"),
        ({}, {"title": ["A"]}, r"corpus.jsonl:1: 'title' must be a string, not a list"),
    ],
)
def test_fields_of_the_wrong_type_name_file_and_line(tmp_path, question, corpus_doc, message):
    """An answer that is a number used to load, then crash the Query page that showed it; every field the app
    reads is checked for its type when the set loads."""
    folder = write_folder(tmp_path / "bad", [{**DOCS[0], **corpus_doc}, DOCS[1]], [{**QS[0], **question}])
    with pytest.raises(DatasetError, match=message) as err:
        load_dataset(folder)
    assert "\n" not in str(err.value)


def test_written_lines_keep_their_keys_in_the_files_order():
    """corpus.jsonl and questions.jsonl as `corpus_jsonl` / `questions_jsonl` write them: a question's extra fields
    first, then qid, question, references, answer and product (only when known); a document's gold tags last."""
    from core.ingest.datasets import corpus_jsonl, questions_jsonl
    from core.schema.documents import Document
    from core.schema.questions import Question
    from core.schema.spans import Span

    q = Question(qid="1", question="How?", references=(Span("d", 0, 4),), answer="So.",
                 extra={"qa_type": "generated"})
    assert questions_jsonl([q]) == (b'{"qa_type": "generated", "qid": "1", "question": "How?", "references": '
                                    b'[{"doc_id": "d", "start": 0, "end": 4}], "answer": "So."}\n')
    doc = Document("d", "T", "text", cnm={"category": "tv"})
    assert corpus_jsonl([doc]) == b'{"doc_id": "d", "title": "T", "text": "text", "cnm": {"category": "tv"}}\n'
