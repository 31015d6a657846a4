"""The browser tests' shared parts: one Streamlit app per test module, served on loopback, and Debian's chromium
driven by Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.local_servers import CHROMIUM, CHROMIUM_ARGS, streamlit_app


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, request):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (scripts/setup.sh --test installs it)")
    ws = tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-ws")
    with streamlit_app(ws, log_path=ws / "streamlit.log") as app:
        yield app.url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
