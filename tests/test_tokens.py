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


def reference_offsets(text: str) -> list[int]:
    """Where each token starts, worked out from tiktoken's own pieces: the bytes of every token, laid end to end
    over the UTF-8 text, each start moved to the next character boundary when it falls inside a character."""
    enc = get_encoding()
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate is 3 bytes here and in tiktoken's repair
    char_at_byte, pos = {}, 0
    for i, ch in enumerate(text):
        char_at_byte[pos] = i
        pos += len(ch.encode("utf-8", "surrogatepass"))
    char_at_byte[pos] = len(text)
    offsets, byte = [], 0
    for token in enc.encode(text, disallowed_special=()):
        b = byte
        while b not in char_at_byte:
            b += 1
        offsets.append(char_at_byte[b])
        byte += len(enc.decode_single_token_bytes(token))
    assert byte == len(data)  # the pieces are the whole text
    return [*offsets, len(text)]


def test_offsets_are_where_each_token_starts():
    texts = ["plain ascii text", "空调过滤网每两周清洁一次。", "mixed 中文 and émojis 🙂 here",
             "a lone \ud800 surrogate", "", "   leading and trailing   ", "<|endoftext|> as text", "调度修滤风。按机。"]
    for text in texts:
        offsets = token_char_offsets(text)
        assert offsets == reference_offsets(text), text
        assert len(offsets) == count_tokens(text) + 1
    # where no token splits a character, each slice is exactly tiktoken's decoded piece
    enc = get_encoding()
    text = "mixed 中文 and émojis here"
    offsets = token_char_offsets(text)
    pieces = [enc.decode_single_token_bytes(t).decode("utf-8") for t in enc.encode(text)]
    assert [text[a:b] for a, b in zip(offsets, offsets[1:])] == pieces
