"""The app starts and its home page renders (Streamlit's AppTest, in-process)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT


def test_home_page_renders():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "ChunkLens"
    assert "naive-500t" in at.markdown[1].value
