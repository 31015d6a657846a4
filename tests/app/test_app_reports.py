"""Pages and reports in the app (AppTest, in-process), on uploaded PDFs: Chunk & compare shows the page view and
offers its report, every Query hit names its pages, and the reports of both pages, made from the session's own
results, hold what the pages show."""

from __future__ import annotations

import html
import re

import pytest
from streamlit.testing.v1 import AppTest

from core.evaluation.results import RunSummary
from core.infra.workspace import Workspace
from core.ingest.library import Library
from core.outputs.figures import collision_grid
from core.outputs.report_pages import app_settings, chunking_report_html, query_report_html
from core.services import build_services
from core.settings import Settings
from tests.support.appflow import FAST_SPECS, click
from tests.support.data import ROOT
from tests.support.pdfs import sample_manual_pdf

QUESTION = "How often should I clean the air filters?"


@pytest.fixture()
def pdf_app(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = FAST_SPECS
    at.run()
    lib_id = at.query_params["lib"]
    lib = Library(Workspace.open(ws).uploads, lib_id[0] if isinstance(lib_id, list) else lib_id)
    added = lib.add([("aircon <225B>.pdf", sample_manual_pdf("aircon-225B.md")),
                     ("fan-F30.pdf", sample_manual_pdf("fan-F30.md"))])
    assert len(added.added) == 2 and not added.errors
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    assert not at.exception and not at.error
    return at, lib


def _settings(lib: Library, results: dict) -> dict[str, str]:
    """What a report of this session names as its settings (the app's services over the same workspace)."""
    services = build_services(Settings(workspace=str(lib.root.parent.parent)))
    return app_settings(services, results, Settings().retrieval_settings(), False)


def _download_labels(at: AppTest) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]


def test_chunk_page_has_the_page_view_and_a_report_of_what_it_shows(pdf_app):
    at, lib = pdf_app
    assert any(h.value == "Chunks on the page" for h in at.subheader)
    assert any("click a chunk to read it" in c.value for c in at.caption)
    assert "Download report" in _download_labels(at)
    results = at.session_state["runs"]["results"]
    docs = lib.documents()
    rows = {s: RunSummary(s, len(r.run.parents()), len(r.run.children()), 400.0, 0.5 if s == "naive-500t" else 0.0,
                          1.0, False, 0) for s, r in results.items()}
    page = chunking_report_html(rows, docs, _settings(lib, results),
                                {s: r.run.parents() for s, r in results.items()}, docs[0].doc_id)
    assert page.startswith("<!DOCTYPE html>") and "What this shows" in page
    assert "The embedder never reads 50% of naive-500t&#x27;s text" in page
    for spec, r in results.items():
        assert f"<code>{html.escape(spec)}</code>" in page and html.escape(r.run.identity) in page
    assert "aircon &lt;225B&gt;" in page and "aircon <225B>" not in page  # a document title is escaped


def test_every_hit_names_its_pages_and_the_query_report_lists_them(pdf_app):
    at, lib = pdf_app
    at.switch_page("pages/query.py").run()
    at.text_input[0].set_value(QUESTION).run()
    at = click(at, "Ask every chunker")
    assert not at.exception and not at.error
    docs = {d.doc_id: d for d in lib.documents()}
    answers = at.session_state["answers"]["answers"]
    cards = [h.proto.body for h in at.get("html") if "data-hit=" in h.proto.body]
    assert len(cards) == sum(len(a.hits) for a in answers.values()) > 0
    for a in answers.values():
        for h in a.hits:
            label = docs[h.chunk.doc_id].page_label(h.chunk.start, h.chunk.end)
            assert re.fullmatch(r"pp?\. \d+(–\d+)?", label)
            where = f"{h.chunk.doc_id} {h.chunk.start}–{h.chunk.end} · {label}"
            assert any(html.escape(where) in c for c in cards), where
    assert "Download report" in _download_labels(at)

    page = query_report_html(QUESTION, answers, list(docs.values()), 5,
                             _settings(lib, at.session_state["runs"]["results"]), collision_grid([]))
    assert html.escape(QUESTION) in page and "no gold evidence, so the hits are listed, not scored" in page
    first = next(iter(answers.values())).hits[0].chunk
    assert html.escape(docs[first.doc_id].page_label(first.start, first.end)) in page
    assert page.count("<h4><code>") == len(answers)
