"""BM25 over exactly the text each chunk is embedded with (prefix + span), beside the Chroma collection.

Why: MiniLM blurs model numbers and part names ("S10" and "S10e", "filter" and "nozzle") and reads only 256 word
pieces, while manual questions name exactly those. A lexical index over the same CNM-prefixed text tells
near-duplicate manuals apart where dense search cannot.

- Scoring is `bm25s` (sparse-matrix BM25, Lucene's variant, k1 = 1.5, b = 0.75).
- Tokens (`lexical_tokens`, tokenizer t2): text is NFKC-normalised and case-folded; runs of letters and digits
  are words, bm25s's English stop words and one-character Latin letters and digits ("Step 1", "press B": they
  match nearly every chunk) are dropped, and the rest is stemmed with Snowball's English stemmer (PyStemmer);
  runs of CJK characters (Han, kana, Hangul), which carry no spaces, become overlapping character bigrams (a
  lone character stays a unigram), as Lucene's CJK bigram analyzer does. Model numbers survive as tokens:
  "SM-G973F" gives "sm" and "g973f", "S10e" gives "s10e".
- Why this analyzer: it was measured, not assumed (`scripts/analyzer_study.py`, docs/RETRIEVAL.md "BM25
  analyzer, chosen by measurement"). BM25 over the chunks of every set (chroma_eval, covid_qa, emanual_galaxy,
  eurorack_modules, the sample set; the manual sets also with product-named questions) was scored against the
  gold spans with t1 (t2 with one-character tokens kept) and its variants: no stemmer or a light plural one, no
  stop words, joined or letter/digit-split model numbers. On our sets no analyzer stays within 0.02 hit@1 and
  hit@10 of the best everywhere (one question on the small sets). The one large effect measured is from held-out
  real manuals (a product manual among near-duplicates, 642 product-named questions): dropping one-character
  tokens gained 0.15 hit@1 there. Over five chunkers (naive-500t, recursive, paragraph, sentence, semantic) and
  the eight sets it is also the change that helps on average and costs little anywhere: mean hit@1 / hit@10
  0.320 / 0.726 against t1's 0.317 / 0.722, more than 0.02 behind t1 on 2 of the 40 chunker-set pairs.
  Dropping the stemmer as well (bm25s's default) cost hit@10 on covid_qa under all five chunkers and hit@1 on
  the small-chunk ones, so the stemmer stays.
- Persistence: one folder per chunk run under the workspace's `lexical/`, named after the run's Chroma collection
  and the tokenizer version, written to a temporary folder of its own and renamed when complete, so an interrupted
  build is never loaded and two sessions building it at once never share a folder (the second keeps the first's).
  It is rebuilt only when that name changes.

Chroma 1.5's hybrid `Collection.search` (sparse vectors with RRF) is not used: it raises NotImplementedError on
the embedded client and on a local `chroma run` server alike (it serves distributed and hosted Chroma only), so
the lexical index lives beside Chroma on both paths.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.infra.storage import new_folder
from core.schema.chunks import Chunk

TOKENIZER_VERSION = "t2"  # bump when `lexical_tokens` changes what it returns
MANIFEST = "chunklens.json"
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}  # bm25s.BM25's arguments for every index

Analyzer = Callable[[str], list[str]]  # text -> the index's tokens

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3131-\u318e"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


_stem_lock = threading.Lock()  # a PyStemmer object is not safe to share between threads


def lexical_tokens(text: str) -> list[str]:
    """The index's tokens for `text`: case-folded words without English stop words and without one-character Latin
    letters and digits, Snowball-stemmed; CJK character bigrams."""
    stop = _stopwords()
    words: list[str] = []
    out: list[tuple[int, str]] = []  # (position in `words`, or -1 for a CJK bigram, which is not stemmed)
    for m in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        if m.lastgroup == "cjk":
            run = m.group()
            out.extend((-1, run[i : i + 2]) for i in range(max(1, len(run) - 1)))
        elif (word := m.group()) not in stop and not (len(word) == 1 and _latin_or_digit(word)):
            out.append((len(words), ""))
            words.append(word)
    if not words:
        return [tok for _, tok in out]
    with _stem_lock:
        stems = _stemmer().stemWords(words)
    return [tok if pos < 0 else stems[pos] for pos, tok in out]


def _latin_or_digit(ch: str) -> bool:
    """A single Latin letter or digit: a unit, a list label or a model's loose part, which matches every chunk."""
    return ch.isdigit() or ch.isascii() or unicodedata.name(ch, "").startswith("LATIN")


def lexical_name(collection: str) -> str:
    """The lexical index beside Chroma collection `collection` (same corpus, chunker identity and embedder:
    the embedded texts are the same), for this tokenizer version."""
    digest = hashlib.sha256(f"{collection}|{TOKENIZER_VERSION}".encode()).hexdigest()
    return f"bm25-{digest[:32]}"


class LexicalIndex:
    """BM25 scores of a query against every indexed chunk, in the order the chunks were indexed.

    `analyzer` tokenizes chunks and queries alike: `lexical_tokens` for every index the app builds, saves and
    loads; another one only for measuring analyzers against each other (scripts/analyzer_study.py), never saved."""

    def __init__(self, ids: list[str], bm25, analyzer: Analyzer = lexical_tokens) -> None:
        self.ids = ids
        self.position = {cid: i for i, cid in enumerate(ids)}
        self._bm25 = bm25
        self._analyzer = analyzer

    @classmethod
    def build(cls, units: Sequence[Chunk], analyzer: Analyzer = lexical_tokens) -> LexicalIndex:
        if not units:
            return cls([], None, analyzer)
        import bm25s

        bm25 = bm25s.BM25(**BM25_PARAMS)
        bm25.index([analyzer(c.embed_text) for c in units], show_progress=False)
        return cls([c.chunk_id for c in units], bm25, analyzer)

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every chunk for `query` (0 where no query token occurs)."""
        if self._bm25 is None:
            return np.zeros(len(self.ids), dtype=np.float32)
        ids = self._bm25.get_tokens_ids(self._analyzer(query))
        if not ids:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self._bm25.get_scores_from_ids(ids)

    def top(self, scores: np.ndarray, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The `n` best (chunk id, score) among chunks with a positive score (and inside `mask`, if given)."""
        live = scores > 0 if mask is None else (scores > 0) & mask
        candidates = np.flatnonzero(live)
        if len(candidates) > n:
            candidates = candidates[np.argpartition(-scores[candidates], n - 1)[:n]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]  # score, then index order: stable ties
        return [(self.ids[i], float(scores[i])) for i in order]

    def search(self, query: str, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        return self.top(self.scores(query), n, mask)

    @staticmethod
    def rank_of(scores: np.ndarray, position: int) -> int | None:
        """1-based rank of one chunk in the full ranking (ties share the best rank); None without a match."""
        s = scores[position]
        return int(np.count_nonzero(scores > s)) + 1 if s > 0 else None

    def save(self, folder: Path) -> None:
        """Write the index to `folder`: built in a temporary folder of its own and renamed whole (`new_folder`), so
        a reader never sees half an index and writers building it at once never share a folder. When another
        writer put the same index there first, theirs stays and this copy is dropped."""
        if self._analyzer is not lexical_tokens:  # the folder's name promises TOKENIZER_VERSION's tokens
            raise ValueError("only an index of lexical_tokens is saved")
        with new_folder(folder, keep_existing=self._saved_in) as tmp:
            self._bm25.save(str(tmp), show_progress=False)
            (tmp / MANIFEST).write_text(json.dumps({"ids": self.ids, "tokenizer": TOKENIZER_VERSION}),
                                        encoding="utf-8")

    def _saved_in(self, folder: Path) -> bool:
        """Whether `folder` holds a whole index of the same chunks (one another writer saved)."""
        try:
            return LexicalIndex.load(folder).ids == self.ids
        except (OSError, ValueError, KeyError):
            return False

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        import bm25s

        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        bm25 = bm25s.BM25.load(str(folder), show_progress=False)
        return cls(list(manifest["ids"]), bm25)


class LexicalStore:
    """Lexical indexes in the workspace, kept open once loaded (one per chunk run)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: dict[str, LexicalIndex] = {}
        self._lock = threading.Lock()

    def for_collection(self, collection: str, units: Sequence[Chunk]) -> LexicalIndex:
        return self.get(lexical_name(collection), units)[0]

    def get(self, name: str, units: Sequence[Chunk]) -> tuple[LexicalIndex, bool]:
        """The index `name` over `units`: held, loaded from disk, or built and saved. Returns (index, built)."""
        with self._lock:
            held = self._open.get(name)
            if held is not None and len(held.ids) == len(units):
                return held, False
            folder = self.root / name
            index = None
            if (folder / MANIFEST).exists():
                try:
                    index = LexicalIndex.load(folder)
                except (OSError, ValueError, KeyError):
                    index = None  # damaged: rebuilt below, never trusted
                if index is not None and index.ids != [c.chunk_id for c in units]:
                    index = None
            built = index is None
            if index is None:
                index = LexicalIndex.build(units)
                if units:  # an empty run has nothing to save
                    self.root.mkdir(parents=True, exist_ok=True)
                    index.save(folder)
            self._open[name] = index
            return index, built
