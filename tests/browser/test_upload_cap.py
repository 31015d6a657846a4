"""A shared server holds at most the operator's total of one visitor's uploads (issue 39, item 11), refused by
the server itself: the files are picked and never submitted, as a visitor parking uploads would. The total is the
client's (issue 50): a second tab from the same address gets no room of its own."""

from __future__ import annotations

from bench.local_servers import streamlit_app
from tests.support.browser import FIRST_PAGE_WAIT, UI_WAIT

MB = 2**20


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024


def _pick(page, files: list[str]):
    """Pick `files` in the Documents page's uploader (never submitted); the uploader."""
    page.locator("input[type=file][multiple]").set_input_files(files=files)
    return page.get_by_test_id("stFileUploader").first


def test_a_visitor_cannot_park_more_uploads_than_the_server_allows(browser, tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_MODE", "shared")
    monkeypatch.setenv("CHUNKLENS_MAX_SESSION_UPLOAD_MB", "100")
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "")  # as scripts/run-app.sh serves
    files = []
    for i in range(4):  # 4 x 40 MB, each under the 50 MB per-file limit
        path = tmp_path / f"part{i}.txt"
        path.write_bytes(b"word " * (40 * MB // 5))
        files.append(str(path))
    with streamlit_app(tmp_path / "ws", log_path=tmp_path / "streamlit.log") as app:
        page = browser.new_context().new_page()
        page.goto(app.url + "/documents")
        page.get_by_text("Upload manuals").first.wait_for(timeout=FIRST_PAGE_WAIT)
        before = _rss_mb(app.proc.pid)
        uploader = _pick(page, files)
        uploader.get_by_text("413").nth(1).wait_for(timeout=UI_WAIT)  # two of the four refused by the server
        page.wait_for_timeout(2000)
        assert uploader.inner_text().count("413") == 2
        # a second tab of the same visitor (another session, the same address) finds the visitor's total used, and
        # so does a third that claims another address in X-Forwarded-For (no proxy is trusted)
        for headers in ({}, {"X-Forwarded-For": "198.51.100.9"}):
            tab = browser.new_context(extra_http_headers=headers).new_page()
            tab.goto(app.url + "/documents")
            tab.get_by_text("Upload manuals").first.wait_for(timeout=FIRST_PAGE_WAIT)
            _pick(tab, files[:1]).get_by_text("413").first.wait_for(timeout=UI_WAIT)
            tab.context.close()
        assert _rss_mb(app.proc.pid) - before < 130  # the two kept (80 MB), not all six (240 MB)
        page.context.close()
