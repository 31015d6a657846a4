"""Metrics on the user's own manuals, in a real browser: two PDFs uploaded with no sample set, a typed question, a
hit marked as answering and narrowed to one sentence; the Query page then shows Hit/MRR for every chunker, the
judged question survives a reload, and Benchmark runs on the library's own set with its heat-map.

It also measures what judging costs a person: the clicks and the seconds from asking a question to its metrics,
written to artifacts/judging.json (figures for docs, not a timed assertion; the clicks are asserted)."""

from __future__ import annotations

import json
import re
import time

import pytest

from core.workbench import DEFAULT_SPECS
from tests.support.browser import SHOTS, UI_WAIT, add_pdfs, nav
from tests.support.data import ROOT
from tests.support.pdfs import sample_manual_pdf

pytestmark = pytest.mark.slow

#: (question, words of the sentence that answers it) in the uploaded manuals
QUESTIONS = [("How often should I clean the air filters?", "Clean the air filters every 2 weeks"),
             ("Which battery does the fan's remote control take?", "CR2025")]


def _judge(page, question: str, evidence: str) -> dict[str, float]:
    """Ask `question`, mark the first hit holding `evidence` as answering, narrowed to that sentence. Returns the
    clicks and seconds it took, from typing the question to the metrics on screen."""
    started, clicks = time.perf_counter(), 0
    box = page.get_by_label("Question", exact=True)
    box.fill(question)
    box.press("Enter")
    page.get_by_role("button", name="Ask every chunker").click()
    clicks += 1
    page.get_by_text("Judge the hits").first.wait_for(timeout=UI_WAIT)
    holder = page.locator("[data-hit]").filter(has_text=evidence).first
    holder.wait_for(state="attached", timeout=UI_WAIT)
    hit = holder.get_attribute("data-hit")
    page.locator(f".st-key-judge-yes-{hit} button").first.click()
    clicks += 1
    page.get_by_text("Which sentences hold the answer?").wait_for(timeout=UI_WAIT)
    page.get_by_test_id("stCheckbox").filter(has_text=evidence).first.click()
    clicks += 1
    page.get_by_role("button", name="Save evidence").click()
    clicks += 1
    page.get_by_test_id("stTable").filter(has_text="judged").wait_for(timeout=UI_WAIT)
    return {"clicks": clicks, "seconds": round(time.perf_counter() - started, 1), "hit": hit}


def test_judged_hits_give_metrics_on_uploaded_pdfs_and_survive_a_reload(app_url, browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.goto(app_url)
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=UI_WAIT)
    add_pdfs(page, {"aircon-225B.pdf": sample_manual_pdf("aircon-225B.md"),
                    "fan-F30.pdf": sample_manual_pdf("fan-F30.md")})
    nav(page, "Chunk & compare")
    page.get_by_role("button", name="Run chunkers").click()
    page.get_by_text(f"Ran {len(DEFAULT_SPECS)} chunker(s)").wait_for(timeout=900_000)

    nav(page, "Query")
    costs = [_judge(page, q, evidence) for q, evidence in QUESTIONS]
    table = page.get_by_test_id("stTable").filter(has_text="judged").inner_text()
    for spec in DEFAULT_SPECS:  # every chunker has its row of Hit / MRR for this question
        assert re.search(rf"^{re.escape(spec)}\s+[01]\.?\d*\s+[\d.]+", table, re.M), f"no metrics for {spec}"
    assert "judged: answers" in page.inner_text("body")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "judging-1-query.png"), full_page=True)
    assert all(c["clicks"] == 4 for c in costs)  # ask, answers it, one sentence, save
    (ROOT / "artifacts").mkdir(exist_ok=True)
    (ROOT / "artifacts" / "judging.json").write_text(json.dumps({"questions": costs}, indent=2))
    print("judging cost per question:", costs)

    # a reload is a new session: the judged questions are the library's
    page.reload()
    page.get_by_role("heading", name="Query").wait_for(timeout=UI_WAIT)
    page.get_by_test_id("stSelectbox").filter(has_text="Question from the QA set").click()
    page.get_by_role("option", name=re.compile(r"^mine-1: How often")).click()
    page.get_by_role("button", name="Ask every chunker").click()
    page.get_by_test_id("stTable").filter(has_text="judged").wait_for(timeout=UI_WAIT)
    page.get_by_text("judged: answers").first.wait_for(timeout=UI_WAIT)

    nav(page, "Benchmark")
    page.get_by_text("judged in the app: 2 documents, 2 questions").wait_for(timeout=UI_WAIT)
    page.get_by_role("button", name="Run benchmark").click()
    page.get_by_text("Benchmark finished").wait_for(timeout=900_000)
    page.get_by_text("Top-1 collisions").first.wait_for(state="attached", timeout=UI_WAIT)
    page.screenshot(path=str(SHOTS / "judging-2-benchmark.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()
    context.close()
