"""The browser tests' shared parts: one Streamlit app served on loopback and one Debian chromium driven by Playwright,
each started once for the browser tests (package scope: they stop after the last one) and shared by every
browser module.

Sharing is safe because every test opens a new browser context without a `?lib=` address, which gives it a library
of its own, and no browser test changes the workspace's settings. The app's workspace starts with the sample set's
vectors (tests/support/world.py), and before any test runs the fixture waits, as long as a slow machine needs, for
the app's first page, so no test's own wait pays for the server's first imports and model loads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.local_servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app
from tests.support.browser import FIRST_PAGE_WAIT


@pytest.fixture(scope="package")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (scripts/setup.sh --test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="package")
def app_url(tmp_path_factory, sample_vectors, browser):
    from tests.support.world import seed_workspace

    ws = seed_workspace(tmp_path_factory.mktemp("browser-ws"), sample_vectors)
    with streamlit_app(ws, log_path=ws / "streamlit.log") as app:
        context = browser.new_context()
        page = context.new_page()
        page.goto(app.url)
        page.get_by_role("heading", name="ChunkLens").wait_for(timeout=FIRST_PAGE_WAIT)
        context.close()
        yield app.url
