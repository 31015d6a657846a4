"""The page view in a real browser: a real 36-page PDF manual uploaded, two chunkers run, page 1 shown with both
chunkers' boxes, and a click on a box showing that chunk's text."""

from __future__ import annotations

import pytest

from core.chunkers.registry import make_chunker
from core.ingest.documents import load_file
from core.outputs.pageview import load_page, place_chunks
from tests.support.browser import SHOTS, UI_WAIT, add_pdfs, nav, pick_chunkers
from tests.support.data import ROOT

pytestmark = pytest.mark.slow

MANUAL = ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf"
SPECS = ("naive-500t", "recursive")


def _figure(page, spec: str):
    """The page view's figure of one chunker (its column holds the chunker's name and the figure)."""
    return page.locator(f".st-key-page-fig-{spec} .js-plotly-plot").first


def test_boxes_of_two_chunkers_on_page_one_and_a_click_shows_the_chunk(app_url, browser):
    doc = load_file(MANUAL)
    first = make_chunker("naive-500t").chunk(doc).chunks[0]
    page_one = load_page(doc, MANUAL.read_bytes(), 1)
    expected = {spec: sum(len(p.boxes) for p in place_chunks(page_one, make_chunker(spec).chunk(doc).chunks, doc))
                for spec in SPECS}
    assert all(n >= 3 for n in expected.values()), expected
    words = " ".join(first.text.split()[:8])
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    page = context.new_page()
    page.goto(app_url)
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=UI_WAIT)
    add_pdfs(page, {MANUAL.name: MANUAL.read_bytes()})

    nav(page, "Chunk & compare")
    pick_chunkers(page, list(SPECS))
    page.get_by_role("button", name="Run chunkers").click()
    page.get_by_text("Ran 2 chunker(s)").wait_for(timeout=600_000)
    page.get_by_text("Chunks on the page").wait_for(timeout=UI_WAIT)
    for spec in SPECS:
        figure = _figure(page, spec)
        figure.wait_for(timeout=UI_WAIT)
        assert figure.locator(".layer-below image, .layer-above image, image").count() >= 1, "the page image"
        boxes = figure.locator(".shapelayer path").count()
        assert boxes == expected[spec], f"{spec}: {boxes} boxes drawn on page 1, {expected[spec]} placed"
        assert page.get_by_text(f"{spec}: ", exact=False).count()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "page-view-1.png"), full_page=True)

    points = _figure(page, "naive-500t").locator(".scatterlayer .trace").first.locator("path.point")
    points.nth(3).click(force=True)
    page.get_by_text(f"Chunk {first.chunk_id}").wait_for(timeout=UI_WAIT)
    card = page.locator(".st-key-page-fig-naive-500t").locator("xpath=..").inner_text()
    body = " ".join(page.inner_text("body").split())
    assert words in body, (words, card[:300])
    page.screenshot(path=str(SHOTS / "page-view-2-clicked.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()
    context.close()
