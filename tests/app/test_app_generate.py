"""Generated questions from the Documents page (AppTest, in-process, the bundled SmolLM2 through llama.cpp): a
library of two uploaded manuals gets a QA set whose every reference is its evidence, and says what was rejected."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.infra.workspace import Workspace
from core.ingest.library import Library
from tests.support.data import ROOT

pytestmark = pytest.mark.slow


def test_the_documents_page_generates_a_qa_set_for_the_library(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900).run()
    lib = Library(Workspace.open(tmp_path / "ws").uploads, at.query_params["lib"])
    manuals = ROOT / "sample_data" / "manuals"
    lib.add([(p.name, p.read_bytes()) for p in (manuals / "fan-F30.md", manuals / "fan-T12.md")])
    at.session_state["settings"] = at.session_state["settings"].model_copy(update={"chat_backend": "llamacpp"})
    at.switch_page("pages/documents.py").run()
    [n] = [x for x in at.number_input if x.label == "Questions"]
    n.set_value(3).run()
    at = [b for b in at.button if b.label == "Generate questions"][0].click().run(timeout=900)
    assert not at.exception
    [done] = [s.value.replace("\\", "") for s in at.success if "Kept " in s.value]  # shown Markdown-escaped
    assert "SmolLM2" in done and "rejected: " in done and "questions with gold spans from 'generated-pick'" in done
    ds = lib.dataset()
    assert ds is not None and ds.name == "generated-pick" and 1 <= len(ds.questions) <= 3
    texts = {d.doc_id: d.text for d in ds.documents}
    for q in ds.questions:  # every reference is an exact, whole span of its manual; the product is named
        assert q.product and all(texts[r.doc_id][r.start:r.end].strip() for r in q.references)
    # again: every answer comes from the cache, the set is replaced by the same questions
    again = [b for b in at.button if b.label == "Generate questions"][0].click().run(timeout=900)
    assert "(0 model calls" in [s.value.replace("\\", "") for s in again.success if "Kept " in s.value][0]
    assert [q.question for q in lib.dataset().questions] == [q.question for q in ds.questions]
