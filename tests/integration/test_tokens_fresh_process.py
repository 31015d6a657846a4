"""tiktoken from packaged files: a fresh Python process with an empty cache counts tokens without a download (the
counts and offsets themselves: tests/unit/test_tokens.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.data import ROOT


def test_fresh_cache_loads_without_download(tmp_path):
    env = {**os.environ, "CHUNKLENS_TIKTOKEN_CACHE": str(tmp_path / "tk"), "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}  # any download attempt would fail
    code = "from core.tokens import count_tokens; print(count_tokens('hello world'))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"
    assert len(list((tmp_path / "tk").iterdir())) == 2
