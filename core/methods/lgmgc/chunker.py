"""LGMGC (arXiv 2501.09940): logits-guided parent chunks and multi-granular children.

`lg`: take the next θ words as a window, run the local LM once over it, read p(end of text) at every sentence
end, and cut the parent at the most likely end; the rest of the window starts the next one. When what is left
is at most θ words it becomes the last parent. A window with no sentence end is cut at its last word.

`mg` / `lgmgc`: every parent (from `recursive` for `mg`, the paper's MG-only ablation, or from `lg`) is split
into children of at most θ/2 and θ/4 words. Children are indexed; retrieval scores a parent by its best child
and returns distinct parents (core.store.retrieval).
"""

from __future__ import annotations

import dataclasses
import time
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import text as T
from core.chunkers.base import Chunker, MetadataPrefix, TitleRouting, build_chunks, check_range, check_words
from core.chunkers.registry import chunker_class, make_chunker, register
from core.chunkers.snippets import chunklens_snippet
from core.chunkers.splitting import STRUCTURE_LEVELS, WORDS, split_to_cap
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.infra.stopping import check_stop
from core.methods.lgmgc.scoring import scorer_of
from core.schema.chunks import Chunk, Chunking
from core.schema.documents import Document
from core.tokens import count_tokens_many


def _outside_words(words: list[tuple[int, int]], first: int, split: int) -> int:
    """`split`, or the end of the word it falls inside (a sentence end within a word, as pysbd gives for "dr.."),
    so that no word is cut and none of its characters is left out of every chunk."""
    for s, e in words[first:]:
        if s >= split:
            break
        if split < e:
            return e
    return split


def logits_guided_spans(text: str, scorer: Any, theta: int,
                        min_words: int) -> tuple[list[tuple[int, int]], list[JsonObject]]:
    """Parent spans and, per window, the p(EOS) curve with the chosen split (for the app): its `start` and `end`,
    the candidate sentence ends (`positions`) and their p(EOS) (`p`), the chosen end (`split`) and the cut made
    there (`cut`)."""
    words = T.words(text)
    sentence_ends = sorted({e for _, e in T.sentences(text)})
    spans: list[tuple[int, int]] = []
    windows: list[JsonObject] = []
    w = 0  # index of the first word of the current window
    while w < len(words):
        check_stop()  # a forward pass per window: a stopped run ends before the next one
        if len(words) - w <= theta:
            spans.append((words[w][0], words[-1][1]))
            break
        start, limit = words[w][0], words[w + theta - 1][1]
        floor = words[w + min_words - 1][1] if min_words > 0 else start
        # the sentence ends inside the window, found by bisection (a scan of them all per window was quadratic)
        candidates = [e for e in sentence_ends[bisect_left(sentence_ends, floor):bisect_right(sentence_ends, limit)]
                      if e > start]
        if candidates:
            scored = scorer.score(text[start:limit], [e - start for e in candidates])
            best = max(range(len(candidates)), key=lambda i: scored.probabilities[i])
            split = candidates[best]
            windows.append({"start": start, "end": limit, "positions": [*candidates],
                            "p": [round(p, 5) for p in scored.probabilities], "split": split})
        else:
            split = limit
            windows.append({"start": start, "end": limit, "positions": [], "p": [], "split": split})
        split = windows[-1]["cut"] = _outside_words(words, w, split)  # "split" stays the chosen sentence end
        s, e = T.strip_span(text, start, split)
        if e > s:
            spans.append((s, e))
        while w < len(words) and words[w][0] < split:
            w += 1
    return spans, windows


@dataclass(frozen=True)
class ScoredWindow:
    """What `split_statistics` reads of a window with a candidate sentence end, from a trace (maybe a cached one)."""

    positions: list[float]
    p: list[float]
    split: float

    @classmethod
    def from_trace(cls, trace: Mapping[str, object]) -> list[ScoredWindow]:
        """The scored windows of an `eos` trace (none for another kind); a window not in the form written is left
        out."""
        windows = trace.get("windows") if trace.get("kind") == "eos" else None
        out = []
        for w in windows if isinstance(windows, list) else ():
            if not isinstance(w, dict):
                continue
            positions, p, split = _numbers(w.get("positions")), _numbers(w.get("p")), w.get("split")
            if positions and len(p) == len(positions) and isinstance(split, int | float):
                out.append(cls(positions, p, split))
        return out


def _numbers(value: object) -> list[float]:
    return [float(v) for v in value if isinstance(v, int | float)] if isinstance(value, list) else []


def split_statistics(traces: Sequence[Mapping[str, object]]) -> dict[str, float] | None:
    """Where the LG chunker cut, over all scored windows: how often at the first candidate sentence end (a sign
    that p(EOS) falls with position rather than following the text), the candidates per window, and the mean
    p(EOS) at the first and the last candidate."""
    windows = [w for t in traces for w in ScoredWindow.from_trace(t)]
    if not windows:
        return None
    n = len(windows)
    return {
        "windows": n,
        "split_at_first_candidate": sum(w.positions[0] == w.split for w in windows) / n,
        "split_at_last_candidate": sum(w.positions[-1] == w.split for w in windows) / n,
        "candidates_per_window": sum(len(w.positions) for w in windows) / n,
        "mean_p_first_candidate": sum(w.p[0] for w in windows) / n,
        "mean_p_last_candidate": sum(w.p[-1] for w in windows) / n,
    }


@register
@dataclass
class LogitsGuidedChunker(MetadataPrefix, TitleRouting, Chunker):
    name = "lg"
    version = 2  # a sentence end inside a word moves to the word's end (no characters left out)
    needs = ("scorer",)
    theta: int = 300
    min_words: int = 50

    def validate(self) -> None:
        check_words(self.name, "theta", self.theta)
        check_range(self.name, "min_words", self.min_words, 0, self.theta - 1, "words", "below theta")

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        scorer = scorer_of(self.context)
        before, started = scorer.forward_passes, time.perf_counter()
        spans, windows = logits_guided_spans(doc.text, scorer, self.theta, self.min_words)
        seconds = time.perf_counter() - started
        trace: JsonObject = {"kind": "eos", "scorer": scorer.label, "windows": [*windows],
                 "forward_passes": scorer.forward_passes - before, "words": T.count_words(doc.text),
                 "windows_scored": sum(1 for w in windows if w["positions"]),
                 "seconds": round(seconds, 3)}
        return Chunking(build_chunks(doc, spans, level="parent"), trace)


def add_children(doc: Document, parents: list[Chunk], theta: int) -> list[Chunk]:
    """Parents followed by their children of at most θ/2 ("h") and θ/4 ("q") words, exact spans inside them."""
    found: list[tuple[Chunk, str, int, int, int]] = []  # parent, child label, cap, start, end
    for p in parents:
        check_stop()
        for label, cap in (("h", max(1, theta // 2)), ("q", max(1, theta // 4))):
            for j, (s, e) in enumerate(split_to_cap(doc.text, p.start, p.end, WORDS, cap, STRUCTURE_LEVELS)):
                found.append((p, f"{label}{j}", cap, s, e))
    texts = [doc.text[s:e] for *_, s, e in found]
    children = [Chunk(doc.doc_id, s, e, text, n, index=p.index, parent_id=p.chunk_id, child=child,
                      meta={"level": f"theta/{theta // cap}"})
                for (p, child, cap, s, e), text, n in zip(found, texts, count_tokens_many(texts), strict=True)]
    return [*parents, *children]


@register
@dataclass
class MultiGranularChunker(MetadataPrefix, TitleRouting, Chunker):
    """Children over another chunker's parents: by default `recursive` (the MG-only ablation)."""

    name = "mg"
    version = 2  # children split by the v2 recursive levels (sentencex)
    theta: int = 300
    parents: str = "recursive"

    def validate(self) -> None:
        """Parents from a single-level chunker sized by θ (recursive, paragraph, lg), checked before any run."""
        check_words(self.name, "theta", self.theta)
        if self.parents in ("mg", "lgmgc"):
            raise ConfigError("mg: parents must come from a single-level chunker")
        parent = chunker_class(self.parents)
        if "theta" not in {f.name for f in dataclasses.fields(parent)}:
            raise ConfigError(f"mg: parents must be a chunker sized by theta (recursive, paragraph, lg), "
                              f"not '{self.parents}'")

    def _parent_chunker(self) -> Chunker:
        return make_chunker(f"{self.parents}:theta={self.theta}", self.context)

    @property
    def needs(self) -> tuple[str, ...]:  # type: ignore[override]
        parent = chunker_class(self.parents)
        return tuple(parent.needs) if isinstance(parent.needs, tuple) else ()

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        base = self._parent_chunker().chunk(doc)
        for c in base.chunks:
            c.meta["level"] = "parent"
        return Chunking(add_children(doc, base.chunks, self.theta), base.trace)


@register
@dataclass
class LgmgcChunker(LogitsGuidedChunker):
    """Logits-guided parents with multi-granular children: the full LGMGC."""

    name = "lgmgc"
    version = 3  # v2: children split by the v2 recursive levels (sentencex); v3: lg v2 parents

    def chunk(self, doc: Document) -> Chunking:
        base = super().chunk(doc)
        return Chunking(add_children(doc, base.chunks, self.theta), base.trace)
