"""Scoring continuity decisions as document-boundary detection on a joined stream.

A FALSE decision between windows i-1 and i predicts "a new document starts here". A true join at offset j is
found by a FALSE at the first window that reaches past j (the one that straddles the join) or at the window
after it (the first one wholly inside the new document): with overlapping windows either reading is fair.
Each join is matched at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.methods.chop.cnm import ChopMeta
from core.schema.chunks import Chunk
from core.schema.documents import Document


@dataclass
class BoundaryScores:
    predicted: int
    true: int
    matched: int

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.true if self.true else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def match_joins(window_ends: Sequence[int], decisions: Sequence[bool | None],
                joins: Sequence[int]) -> tuple[dict[int, int], dict[int, int]]:
    """({window: join it found}, {join: window where it should have been found} for the joins missed).
    `window_ends[i]` is the end offset of window i; `decisions[i]` the continuity from window i-1 to i (None for
    the first window)."""
    predicted = {i for i, d in enumerate(decisions) if d is False}
    found: dict[int, int] = {}
    missed: dict[int, int] = {}
    for j in joins:
        first = next((i for i, end in enumerate(window_ends) if end > j), None)
        if first is None:
            continue
        hit = next((c for c in (first, first + 1) if c in predicted and c not in found), None)
        if hit is None:
            missed[j] = max(first, 1) if len(window_ends) > 1 else first
        else:
            found[hit] = j
    return found, missed


def score_boundaries(window_ends: Sequence[int], decisions: Sequence[bool | None],
                     joins: Sequence[int]) -> BoundaryScores:
    found, _ = match_joins(window_ends, decisions, joins)
    return BoundaryScores(sum(1 for d in decisions if d is False), len(joins), len(found))


LABELS = ("start", "found join", "false alarm", "missed join", "correct continue")


@dataclass
class Decision:
    """One continuity decision judged against the true joins, for the app's strip."""

    index: int
    label: str  # one of LABELS
    decision: bool | None
    reason: str
    before: str  # the text just before the cut (the start of this window)
    after: str  # and just after it
    join: int | None = None  # the true join this decision found or missed


def judge_decisions(text: str, starts: Sequence[int], ends: Sequence[int], decisions: Sequence[bool | None],
                    reasons: Sequence[str | None], joins: Sequence[int], context: int = 120) -> list[Decision]:
    """Each window's decision as found join / missed join / false alarm / correct continue (or start)."""
    found, missed = match_joins(ends, decisions, joins)
    missed_at = {w: j for j, w in missed.items()}
    out = []
    for i, (start, d) in enumerate(zip(starts, decisions)):
        if d is None:
            label, join = "start", None
        elif d is False:
            label, join = ("found join", found[i]) if i in found else ("false alarm", None)
        else:
            label, join = ("missed join", missed_at[i]) if i in missed_at else ("correct continue", None)
        out.append(Decision(i, label, d, reasons[i] or "", text[max(0, start - context) : start],
                            text[start : start + context], join))
    return out


def decisions_of(chunks: Sequence[Chunk]) -> list[bool | None]:
    """The continuity decision a CHOP run made before each chunk (None: none, as before a document's first chunk
    or in another chunker's run)."""
    return [ChopMeta.of(c).continuity for c in chunks]


def judge_run(doc: Document, chunks: Sequence[Chunk]) -> tuple[list[Decision], BoundaryScores | None]:
    """A chunk run's decisions over one document judged against its true joins, and their boundary scores (None
    for a document with no joins to score against)."""
    own = [c for c in chunks if c.doc_id == doc.doc_id]
    decisions = decisions_of(own)
    judged = judge_decisions(doc.text, [c.start for c in own], [c.end for c in own], decisions,
                             [ChopMeta.of(c).reason for c in own], doc.joins)
    scores = score_boundaries([c.end for c in own], decisions, doc.joins) if doc.joins else None
    return judged, scores
