"""The stakeholder story in a real browser (Streamlit on loopback, Debian's chromium through Playwright): the guided
demo, uploads that survive loading the sample set, results that come back in a fresh tab, the collision view and
the continuity strip against the true joins. Each test checks what the page shows."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core.workbench import DEFAULT_SPECS
from tests.support.browser import SHOTS, UI_WAIT, nav
from tests.support.pdfs import make_pdf

pytestmark = pytest.mark.slow


def _home(browser, app_url, lib: str | None = None):
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.goto(app_url + (f"/?lib={lib}" if lib else ""))
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=UI_WAIT)
    return context, page


def test_the_guided_demo_reaches_its_summary(app_url, browser):
    context, page = _home(browser, app_url)
    page.get_by_role("button", name="Run the guided demo").click()
    page.get_by_text(re.compile(r"^Summary · 56 product-named questions")).wait_for(timeout=900_000)
    page.get_by_text("CHOP's continuity decisions").wait_for(timeout=UI_WAIT)
    page.get_by_text("Top-1 collisions").first.wait_for(timeout=UI_WAIT)
    assert "This library holds 0 document(s)" in page.inner_text("body")  # the user's library is untouched
    page.get_by_text(re.compile(r"one question moves hit@k by 0\.018")).wait_for(timeout=UI_WAIT)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "story-1-demo.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()
    # the report it downloads says the same in a browser: intervals, the pair list and its matrix
    with page.expect_download() as download:
        page.get_by_role("button", name="Download report").click()
    report = SHOTS / "story-1-report.html"
    download.value.save_as(report)
    page.goto(report.as_uri())
    page.get_by_role("heading", name="Is the difference real?").wait_for(timeout=UI_WAIT)
    assert "reliably" in page.inner_text("body")
    page.screenshot(path=str(SHOTS / "story-1-report.png"), full_page=True)
    context.close()


def test_an_uploaded_pdf_survives_loading_the_sample_set(app_url, browser):
    context, page = _home(browser, app_url)
    nav(page, "Documents")
    page.locator("input[type=file][multiple]").set_input_files(
        files=[{"name": "kettle-manual.pdf", "mimeType": "application/pdf",
                "buffer": make_pdf(["Descale the kettle every month.", "Empty it after use."])}])
    page.get_by_role("button", name="Add uploaded files").click()
    page.get_by_text("Added 1 document(s): kettle-manual").wait_for(timeout=UI_WAIT)
    page.get_by_role("button", name="Load the sample set").click()
    page.get_by_text("Loaded 7 documents and 56 questions").wait_for(timeout=UI_WAIT)
    page.get_by_text("the library's other 1 document(s) are kept").wait_for(timeout=UI_WAIT)
    page.get_by_text("kettle-manual").first.wait_for(state="attached", timeout=UI_WAIT)  # still in the table
    page.get_by_text("aircon-225B").first.wait_for(state="attached", timeout=UI_WAIT)
    page.screenshot(path=str(SHOTS / "story-2-upload-kept.png"), full_page=True)
    context.close()


def test_results_come_back_in_a_fresh_tab_with_collisions_and_the_strip(app_url, browser):
    context, page = _home(browser, app_url)
    lib = re.search(r"lib=([a-z0-9]+)", page.url).group(1)
    nav(page, "Documents")
    page.get_by_role("button", name="Load the sample set").click()
    page.get_by_text("Loaded 7 documents").wait_for(timeout=UI_WAIT)
    page.get_by_text("one joined stream").click()
    expect(page.get_by_role("radio", name="one joined stream")).to_be_checked(timeout=UI_WAIT)
    page.wait_for_timeout(1000)  # the rerun that stores the choice
    nav(page, "Chunk & compare")
    page.get_by_role("button", name="Run chunkers").click()
    page.get_by_text("Ran 8 chunker(s)").wait_for(timeout=900_000)
    page.screenshot(path=str(SHOTS / "story-3-chunks.png"), full_page=True)
    # the continuity strip of the joined sample stream: its decisions against the six true joins
    page.get_by_text(re.compile(r"Boundary precision .* against the 6 true joins")).first.wait_for(timeout=UI_WAIT)
    page.get_by_text("found join").first.wait_for(state="attached", timeout=UI_WAIT)  # the strip's legend
    page.screenshot(path=str(SHOTS / "story-3-strip.png"), full_page=True)
    context.close()

    # a fresh browser context (no cookies, no session) opens the Query address of the same library
    fresh = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = fresh.new_page()
    page.goto(f"{app_url}/query?lib={lib}")
    page.get_by_role("heading", name="Query").wait_for(timeout=UI_WAIT)
    page.get_by_role("button", name="Ask every chunker").wait_for(timeout=UI_WAIT)
    assert "Run the chunkers on the Chunk & compare page first" not in page.inner_text("body")
    page.get_by_test_id("stSelectbox").filter(has_text="Question from the QA set").click()
    page.get_by_role("option").nth(1).click()
    page.get_by_role("button", name="Ask every chunker").click()
    page.get_by_text("This session's questions").wait_for(timeout=UI_WAIT)
    # the collision view: one row per chunker, each with its wrong_doc@k
    page.get_by_text("Where each chunker's hits come from").first.wait_for(state="attached", timeout=UI_WAIT)
    rows = page.get_by_text(re.compile(r"\(wrong_doc \d\.\d\d\)"))
    assert rows.count() == len(DEFAULT_SPECS)
    page.screenshot(path=str(SHOTS / "story-4-collisions.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()
    fresh.close()
