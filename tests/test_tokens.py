"""tiktoken from packaged files, and token offsets that are always valid cut points."""

from __future__ import annotations

import os
import subprocess
import sys

from core.tokens import count_tokens, get_encoding, token_char_offsets
from tests.conftest import ROOT


def test_fresh_cache_loads_without_download(tmp_path):
    env = {**os.environ, "CHUNKLENS_TIKTOKEN_CACHE": str(tmp_path / "tk"), "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}  # any download attempt would fail
    code = "from core.tokens import count_tokens; print(count_tokens('hello world'))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"
    assert len(list((tmp_path / "tk").iterdir())) == 2


def test_cl100k_counts():
    assert get_encoding().name == "cl100k_base"
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special tokens are counted as plain text, never refused


def test_offsets_are_character_boundaries():
    texts = ["plain ascii text", "空调过滤网每两周清洁一次。", "mixed 中文 and émojis 🙂 here",
             "a lone \ud800 surrogate"]
    for text in texts:
        offsets = token_char_offsets(text)
        assert offsets[0] == 0 and offsets[-1] == len(text)
        assert offsets == sorted(offsets)
        assert "".join(text[a:b] for a, b in zip(offsets, offsets[1:])) == text
