"""The real app in a real browser: Streamlit served on loopback, driven by Playwright in Debian's chromium.

Loads the sample set, runs every default chunker, asks a question, checks that every chunker answered, and
saves screenshots (under artifacts/screenshots, or $CHUNKLENS_SCREENSHOTS).
"""

from __future__ import annotations

import pytest

from bench.local_servers import streamlit_app
from core.workbench import DEFAULT_SPECS
from tests.support.browser import FIRST_PAGE_WAIT, SHOTS, UI_WAIT, nav

pytestmark = pytest.mark.slow


def test_sample_set_all_chunkers_and_a_question(app_url, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(app_url)
    page.get_by_role("heading", name="ChunkLens").wait_for(timeout=UI_WAIT)
    assert "lib=" in page.url
    page.screenshot(path=str(SHOTS / "1-home.png"))

    nav(page, "Documents")
    page.get_by_role("button", name="Load the sample set").click()
    page.get_by_text("Loaded 7 documents and 56 questions").wait_for(timeout=UI_WAIT)
    page.screenshot(path=str(SHOTS / "2-documents.png"), full_page=True)

    nav(page, "Chunk & compare")
    page.get_by_role("button", name="Run chunkers").click()
    page.get_by_text("Ran 8 chunker(s)").wait_for(timeout=900_000)
    page.get_by_text("Chunk boundaries").first.wait_for(timeout=UI_WAIT)
    page.screenshot(path=str(SHOTS / "3-chunks.png"), full_page=True)

    nav(page, "Query")
    page.get_by_test_id("stSelectbox").filter(has_text="Question from the QA set").click()
    page.get_by_role("option").nth(1).click()
    page.get_by_role("button", name="Ask every chunker").click()
    page.get_by_text("This session's questions").wait_for(timeout=UI_WAIT)
    for spec in DEFAULT_SPECS:
        assert page.get_by_text(f"{spec} ·").count() >= 1, f"no results shown for {spec}"
    page.screenshot(path=str(SHOTS / "4-query.png"), full_page=True)
    assert not page.get_by_test_id("stException").count()


def test_a_page_address_opened_first_after_a_start_gets_the_apps_navigation(tmp_path, browser):
    """The first visitor after a server start who opens a page's own address (a bookmark of /documents?lib=...)
    gets that page inside the app (its navigation, the Settings sidebar) with the library of the link, not the
    page file run alone under Streamlit's generated navigation."""
    from core.infra.workspace import Workspace
    from core.ingest.library import Library, new_library_id

    ws = Workspace.open(tmp_path / "ws")
    lib = Library(ws.uploads, new_library_id())
    lib.add([("kettle-notes.md", b"# Kettle\n\nDescale the kettle every month.")])
    with streamlit_app(ws.root, log_path=tmp_path / "streamlit.log") as app:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{app.url}/documents?lib={lib.id}")
        page.get_by_role("heading", name="Documents").wait_for(timeout=FIRST_PAGE_WAIT)  # a newly started app
        page.get_by_text("kettle-notes").first.wait_for(state="attached", timeout=UI_WAIT)  # a data grid cell
        entries = [line.strip() for line in page.get_by_test_id("stSidebarNav").inner_text().splitlines()]
        assert "Chunk & compare" in entries and "app" not in entries  # the app's titles, not the file names
        assert page.get_by_text("Settings").count() >= 1
        assert f"lib={lib.id}" in page.url
        page.close()
