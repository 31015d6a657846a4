"""The steps of a browser test (Playwright in Debian's chromium, tests/browser): where screenshots go (`SHOTS`:
artifacts/screenshots, or $CHUNKLENS_SCREENSHOTS), going to a page of the app by its title, and uploading PDFs."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.data import ROOT

SHOTS = Path(os.environ.get("CHUNKLENS_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))


def nav(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)


def add_pdfs(page, files: dict[str, bytes]) -> None:
    """On Documents, upload these PDFs (name -> bytes) and add them to the library."""
    nav(page, "Documents")
    page.locator("input[type=file][multiple]").set_input_files(files=[
        {"name": name, "mimeType": "application/pdf", "buffer": data} for name, data in files.items()])
    page.get_by_role("button", name="Add uploaded files").click()
    page.get_by_text(f"Added {len(files)} document(s)").wait_for(timeout=120_000)
