"""The steps of a browser test (Playwright in Debian's chromium, tests/browser): where screenshots go (`SHOTS`:
artifacts/screenshots, or $CHUNKLENS_SCREENSHOTS), going to a page of the app by its title, and uploading PDFs."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.data import ROOT

SHOTS = Path(os.environ.get("CHUNKLENS_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
#: how long a test waits (ms) for what a page shows after a click or a navigation, and for the first page of a newly
#: started app (imports, the models' first load). Upper bounds, not delays: a passing test waits only as long as its
#: page takes, so they are set for a slow machine under load (2x slower than the development machine, with the
#: other core busy), where 60 s once proved too short.
UI_WAIT = 180_000
FIRST_PAGE_WAIT = 600_000


def nav(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=UI_WAIT)


def add_pdfs(page, files: dict[str, bytes]) -> None:
    """On Documents, upload these PDFs (name -> bytes) and add them to the library."""
    nav(page, "Documents")
    page.locator("input[type=file][multiple]").set_input_files(files=[
        {"name": name, "mimeType": "application/pdf", "buffer": data} for name, data in files.items()])
    page.get_by_role("button", name="Add uploaded files").click()
    page.get_by_text(f"Added {len(files)} document(s)").wait_for(timeout=UI_WAIT)


def pick_chunkers(page, specs: list[str]) -> None:
    """On Chunk & compare: clear the chunker picker and type `specs` as the run's chunkers."""
    chunkers = page.get_by_test_id("stMultiSelect").filter(has_text="Chunkers").first
    chunkers.get_by_role("button", name="Clear all").click()
    extra = page.get_by_label("More chunkers with parameters (comma separated)")
    extra.fill(", ".join(specs))
    extra.press("Enter")
