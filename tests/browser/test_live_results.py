"""Results as they come, in a real browser: a real 36-page PDF through a fast chunker and then a slow one (`semantic`
embeds every sentence of a text no cache holds); the fast one's summary row and boundary timeline are on the page,
under an overall bar, while the slow one is still running, and the page's full view replaces them at the end."""

from __future__ import annotations

import pytest

from tests.support.browser import SHOTS, UI_WAIT, add_pdfs, nav, pick_chunkers
from tests.support.data import ROOT

pytestmark = pytest.mark.slow

MANUAL = ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf"
SLOW = "semantic:buffer=4"


def test_the_first_chunkers_row_shows_before_the_run_ends(app_url, browser):
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    page = context.new_page()
    page.goto(app_url)
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=UI_WAIT)
    add_pdfs(page, {MANUAL.name: MANUAL.read_bytes()})

    nav(page, "Chunk & compare")
    # semantic over 4 sentences either side: texts no other test embeds, so no vector of this session's shared
    # workspace (another test runs the defaults on this manual) makes it fast enough to close the window
    pick_chunkers(page, ["paragraph", SLOW])
    page.get_by_role("button", name="Run chunkers").click()

    status = page.get_by_test_id("stExpander").filter(has_text="Chunking and indexing")
    status.get_by_text(f"1/2 chunkers done · running {SLOW}").wait_for(timeout=UI_WAIT)
    live = status.get_by_test_id("stDataFrame")
    live.get_by_text("paragraph", exact=True).wait_for(state="attached", timeout=UI_WAIT)  # a data grid cell
    status.get_by_text("Chunk boundaries").first.wait_for(timeout=UI_WAIT)  # its boundary timeline
    assert not page.get_by_text("Ran 2 chunker(s)").count()  # the run is still going
    assert not live.get_by_text(SLOW, exact=True).count()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "live-results-1.png"), full_page=True)

    page.get_by_text("Ran 2 chunker(s)").wait_for(timeout=600_000)
    assert not page.get_by_text("chunkers done").count()  # the live view gave way to the full one
    page.get_by_text("Chunks on the page").wait_for(timeout=UI_WAIT)
    page.screenshot(path=str(SHOTS / "live-results-2.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()
    context.close()
