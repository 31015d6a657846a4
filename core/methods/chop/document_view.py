"""The `extract` backend seen from one document (`ExtractCnm.for_document`): its windows' continuity decisions,
in window order (a title line, a new model, a similarity drop), and its runs' tags, each read from the document's
own evidence."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from core.infra.stopping import check_stop, stop_checker
from core.llm.base import LLMStats
from core.methods.chop.cnm import CNM, TITLE_PREFIX, CnmResult, DecisionResult
from core.methods.chop.reading import (
    FIRST_PAGE,
    Library,
    Name,
    has_digit,
    models_in,
)
from core.methods.chop.rules import models_match, normalise_model

COVER = 4000  # characters after a run's start in which a title line (a table of contents) belongs to the run
LOOKAHEAD = 15000  # characters after a new model in which the run's own model must not be named again


class TaggingBackend(Protocol):
    """What a document's view asks of the backend that learned the library (`ExtractCnm`)."""

    key: str
    label: str
    stats: LLMStats
    library: Library
    embedder: Any
    min_similarity: float

    def title_lines(self, doc: Any) -> list[tuple[int, str]]: ...

    def opening_title(self, text: str) -> str | None: ...

    def distinctive_models(self, text: str) -> list[tuple[str, float, int]]: ...

    def name_of(self, line: str) -> Name: ...

    def tag(self, text: str, title: str | None = None, window: str | None = None,
            fallback_title: str | None = None) -> tuple[CNM, dict[str, str]]: ...


def tag_results(texts: Sequence[str], tag: Callable[[str], tuple[CNM, dict[str, str]]],
             progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
    """Each text's tag as a backend answer (the tag's JSON as the raw answer, its seconds, its sources)."""
    out = []
    for i, text in enumerate(texts):
        check_stop()
        started = time.perf_counter()
        cnm, sources = tag(text)
        out.append(CnmResult(cnm, raw=cnm.model_dump_json(), seconds=time.perf_counter() - started, sources=sources))
        if progress:
            progress(i + 1, len(texts))
    return out


def split_title(text: str) -> tuple[str | None, str]:
    if text.startswith(TITLE_PREFIX):
        first, _, rest = text.partition("\n")
        return first[len(TITLE_PREFIX):].strip() or None, rest.lstrip("\n")
    return None, text


class DocumentView:
    """The backend seen from one document: its windows' decisions and its runs' tags."""

    reads_runs = True  # the chunker gives `extract` each run's whole text, from its cut to the next

    def __init__(self, backend: TaggingBackend, doc: Any, spans: Sequence[tuple[int, int]],
                 title: str | None = None) -> None:
        self.backend = backend
        self.doc = doc
        self.title = title
        self.key, self.label, self.stats = backend.key, backend.label, backend.stats
        self.spans = {(doc.text[s:e] if doc is not None else ""): (s, e) for s, e in reversed(spans)}
        self.titles = backend.title_lines(doc) if doc is not None else []
        self._seen: Counter[str] = Counter()
        self._seen_to = -1  # no run started yet
        self._run_start = 0
        self._run_name: str | None = title

    def extract(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
        def tag(text: str) -> tuple[CNM, dict[str, str]]:
            given, body = split_title(text)
            if given and self.doc is not None and given == self.doc.title:
                given = self.title or given  # the title the backend reads for this document (`for_document`)
            # the document's title: given with the first run; later runs fall back to it after their own evidence
            return self.backend.tag(body, title=given, window=body[:FIRST_PAGE],
                                    fallback_title=None if given else self.title)

        return tag_results(texts, tag, progress)

    def _title_between(self, lo: int, hi: int) -> tuple[int, str] | None:
        return next(((off, t) for off, t in self.titles if lo < off <= hi and off > 0), None)

    def _run_models_until(self, end: int) -> Counter[str]:
        """The models named in the current run (from its cut) up to offset `end`, counted as the windows go."""
        if end > self._seen_to:
            found = models_in(self.doc.text[self._seen_to:end], self.backend.library.series)
            self._seen.update(normalise_model(m) for m in found.elements())
            self._seen_to = end
        return self._seen

    def _new_run(self, at: int, title: str | None = None) -> None:
        self._seen, self._seen_to, self._run_start = Counter(), at, at
        self._run_name = self.backend.name_of(title).model if title else None

    def _still_named(self, at: int) -> bool:
        """Whether the text after `at` (LOOKAHEAD characters) still names the current run's model: its title's
        model or the model it has named most. Then a new model there is an accessory or a sibling mentioned in
        passing (a battery "BP-40", a cable "CX-2"), not a new document."""
        ahead = self.doc.text[at:at + LOOKAHEAD]
        if self._run_name:
            forms = [self._run_name] + [w for w in self._run_name.split() if has_digit(w)]
            if any(re.search(rf"(?<!\w){re.escape(f)}(?!\w)", ahead, re.IGNORECASE) for f in forms):
                return True
        top = [m for m, _ in self._seen.most_common(1)]
        return bool(top) and any(normalise_model(m) in top for m in models_in(ahead, self.backend.library.series))

    def decide_one(self, anchor: str, current: str, similarity: float | None) -> tuple[bool, str, int | None]:
        """(same, reason, cut offset relative to the start of `current`, or None). Decisions are made in the
        order of the windows: the tag-change signal compares a window with the run it would continue."""
        a, c = self.spans.get(anchor), self.spans.get(current)
        if a is None or c is None or self.doc is None:  # loose texts: only their own models to compare
            return self._loose(anchor, current, similarity)
        if self._seen_to < 0:
            self._new_run(a[0], self.title or self.backend.opening_title(anchor))
        mid = (c[0] + c[1]) // 2
        # a title belongs to the first window that is mostly past it
        found = self._title_between((a[0] + a[1]) // 2, mid)
        if found and found[0] - self._run_start < COVER:
            found = None  # a document's contents page after its cover: the same document
        if found:
            off, line = found
            self._new_run(off, line)
            return False, f"new title: {line[:60]!r}", off - c[0]
        # a model named at least twice, first named where this window owns the text (past the previous
        # window's middle, up to its own), and not named before in the current run. Not in a run that a title
        # opened: where documents announce themselves with titles, a model change without one is an accessory
        lo = (a[0] + a[1]) // 2
        region = self.doc.text[lo:c[1]]
        for model, _, n in [] if self._run_name else self.backend.distinctive_models(region):
            first = lo + region.find(model)
            if n < 2 or not lo < first <= mid:
                continue
            seen = self._run_models_until(first)
            if seen and not any(models_match(model, m) or normalise_model(model) == m for m in seen) and \
                    not self._still_named(first + len(model)):
                self._new_run(first)
                return False, f"tag changes: model {model} is new in this run", first - c[0]
            break
        self._run_models_until(mid)
        if similarity is not None and similarity < self.backend.min_similarity:
            self._new_run(c[0])
            return False, f"unrelated text (similarity {similarity:.2f})", 0
        return True, "no strong evidence of a new document", None

    def _loose(self, anchor: str, current: str, similarity: float | None) -> tuple[bool, str, int | None]:
        series = self.backend.library.series
        a_models = {normalise_model(m) for m in models_in(anchor, series)}
        for model, _, n in self.backend.distinctive_models(current):
            if n >= 2 and a_models and normalise_model(model) not in a_models and \
                    not any(models_match(model, m) for m in models_in(anchor, series)):
                return False, f"tag changes: model {model} is new", 0
            break
        if similarity is not None and similarity < self.backend.min_similarity:
            return False, f"unrelated text (similarity {similarity:.2f})", 0
        return True, "no strong evidence of a new document", None

    def decide(self, pairs: Sequence[tuple[str, str]],
               progress: Callable[[int, int], None] | None = None) -> list[DecisionResult]:
        sims: list[float | None] = [None] * len(pairs)
        embedder = self.backend.embedder
        if embedder is not None and pairs:
            vecs = np.asarray(embedder.embed([t for pair in pairs for t in pair], stop_checker()), dtype=np.float32)
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            sims = [float(vecs[2 * i] @ vecs[2 * i + 1]) for i in range(len(pairs))]
        out = []
        for i, ((anchor, current), sim) in enumerate(zip(pairs, sims)):
            check_stop()
            started = time.perf_counter()
            same, reason, cut = self.decide_one(anchor, current, sim)
            out.append(DecisionResult(same, reason, raw=f"same={same}: {reason}", seconds=time.perf_counter() - started,
                                      similarity=sim, cut=cut))
            if progress:
                progress(i + 1, len(pairs))
        return out
