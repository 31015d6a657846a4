"""Discarding saved tag edits and replacing a QA set ask first, and Cancel keeps what was there (the real app,
through AppTest). Removing documents: tests/app/test_app.py::test_documents_page_loads_the_sample_set."""

from __future__ import annotations

import json

from core.infra.workspace import Workspace
from core.ingest.library import Library
from tests.support.appflow import click, edit_a_tag, edited_models, new_session, run_chunks, upload
from tests.support.corpora import MANUAL


def test_discard_edits_asks_first_and_cancel_keeps_them(tmp_path, monkeypatch):
    at = edit_a_tag(run_chunks(upload(new_session(monkeypatch, tmp_path / "ws"), [("breeze.md", MANUAL)])))
    assert "ZZ9" in edited_models(at)
    at = click(at, "Discard edits")
    assert "Discard every saved tag edit" in at.warning[0].value and "ZZ9" in edited_models(at)
    at = click(at, "Cancel")
    assert "ZZ9" in edited_models(at)
    at = click(click(at, "Discard edits"), "Yes, discard the edits")
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception and not at.session_state["edited"]
    assert "ZZ9" not in [c.meta["cnm"]["model"] for c in at.session_state["runs"]["results"]["chop"].run.chunks]


def _qa_set(question: str) -> tuple[bytes, bytes]:
    text = "The Breeze 200 fan has three speeds. Clean the blades monthly."
    corpus = json.dumps({"doc_id": "breeze", "title": "Breeze 200", "text": text}) + "\n"
    start = text.index("Clean")
    questions = json.dumps({"qid": "q1", "question": question, "answer": "monthly",
                            "references": [{"doc_id": "breeze", "start": start, "end": len(text)}]}) + "\n"
    return corpus.encode(), questions.encode()


def _upload_set(at, question: str):
    corpus, questions = _qa_set(question)
    at.file_uploader(key="bench-corpus").set_value(("corpus.jsonl", corpus, "application/json"))
    at.file_uploader(key="bench-questions").set_value(("questions.jsonl", questions, "application/json"))
    return at.run()


def test_replacing_a_qa_set_of_the_same_name_asks_first(tmp_path, monkeypatch):
    at = new_session(monkeypatch, tmp_path / "ws")
    at.switch_page("pages/benchmark.py").run()
    at = click(_upload_set(at, "How often are the blades cleaned?"), "Load this set")
    assert not at.exception and "Loaded 1 documents and 1 questions" in at.success[0].value
    at = click(_upload_set(at, "What does the second set ask?"), "Load this set")
    assert "already has a QA set named 'my\\-set'" in at.warning[0].value
    at = click(at, "Cancel")
    lib = Library(Workspace.open(tmp_path / "ws").uploads, at.query_params["lib"])
    assert [q.question for q in lib.dataset().questions] == ["How often are the blades cleaned?"]
    at = click(click(at, "Load this set"), "Yes, replace the set")
    assert not at.exception and not at.error
    assert [q.question for q in lib.dataset().questions] == ["What does the second set ask?"]
