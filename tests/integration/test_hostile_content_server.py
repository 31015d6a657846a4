"""XSRF protection on the running app: `streamlit run` as scripts/run-app.sh starts it refuses an upload without
the XSRF token, or with a token that is not the cookie's (the config and what the app draws:
tests/app/test_hostile_content.py)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from bench.local_servers import streamlit_app


def _put_upload(base: str, headers: dict[str, str]) -> tuple[int, bytes]:
    body = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello\r\n--b--\r\n'
    req = urllib.request.Request(f"{base}/_stcore/upload_file/some-session/some-file", data=body, method="PUT",
                                 headers={"Content-Type": "multipart/form-data; boundary=b", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.slow
def test_the_running_server_refuses_an_upload_without_the_xsrf_token(tmp_path):
    """The app as scripts/run-app.sh starts it (from the project folder, so .streamlit/config.toml applies)."""
    with streamlit_app(tmp_path / "ws", log_path=tmp_path / "streamlit.log") as app:
        base = app.url
        assert _put_upload(base, {}) == (403, b"XSRF token missing or invalid")
        forged = {"X-Xsrftoken": "abc124", "Cookie": "_streamlit_xsrf=abc123"}  # a token that is not the cookie's
        assert _put_upload(base, forged)[0] == 403
        # the same request with a matching pair passes the XSRF check (and fails later: no such session), so the
        # 403s above are the XSRF check's
        status, body = _put_upload(base, {"X-Xsrftoken": "abc123", "Cookie": "_streamlit_xsrf=abc123"})
        assert status == 400 and b"session" in body.lower()
