"""The HTML report shows the winner's "Use it in your code" snippet (core/outputs/report_html.py): the best chunker by
hit at the smallest k, its snippet escaped in a code block beside it."""

from __future__ import annotations

import copy
import html
import json

import pytest

from core.chunkers.registry import make_chunker
from core.outputs.report_html import render_html, winner
from core.outputs.report_summary import view_of
from tests.support.data import ROOT

DEMO = ROOT / "docs" / "results" / "demo_reranked.json"
HEADING = "<h3>Use the winner in your code</h3>"


@pytest.fixture(scope="module")
def report() -> dict:
    return json.loads(DEMO.read_text(encoding="utf-8"))


def _code(page: str) -> str:
    start = page.index(HEADING)
    return page[start:page.index("</pre>", start)]


def test_the_demo_reports_winner_is_shown_with_its_snippet(report):
    best = winner(view_of(report))
    hits = {spec: r["hit@1"] for spec, r in report["results"].items()}
    assert hits[best] == max(hits.values())
    code = _code(render_html(report))
    assert f"<code>{html.escape(best)}</code>" in code
    assert html.escape(make_chunker(best).snippet()) in code


def test_a_peer_that_wins_shows_its_librarys_code(report):
    peer = "langchain-recursive:chunk_size=300:chunk_overlap=30"
    results = report["results"]
    edited = copy.deepcopy(report)
    edited["pairs"] = []
    edited["results"] = {"naive-500t": results["naive-500t"], peer: copy.deepcopy(results["naive-500t"])}
    edited["results"][peer]["hit@1"] = 0.9
    code = html.unescape(_code(render_html(edited)))
    assert f"Best by hit@1: <code>{peer}</code> (0.900)" in code
    assert "RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=30)" in code


def test_a_winner_this_version_does_not_know_gets_one_line_and_no_code(report):
    edited = copy.deepcopy(report)
    edited["pairs"] = []
    edited["results"] = {"naive-500t": report["results"]["naive-500t"],
                         "retired-chunker": copy.deepcopy(report["results"]["naive-500t"])}
    edited["results"]["retired-chunker"]["hit@1"] = 0.9
    page = render_html(edited)
    section = page[page.index(HEADING):]
    assert "no snippet: unknown chunker" in section.split("<h3>", 2)[1]
    assert "<pre class='snippet'>" not in page
