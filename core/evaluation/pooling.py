"""Which hits a hand-judged question has judgments for: the pool depth of TREC-style pooled evaluation.

A judged question (core.ingest.judged) knows only the text a person read. A hit is *judged* when it is relevant by
the metrics' rule (it overlaps the evidence by half the shorter of the two), or when every non-space character of
it lies inside text the person judged: evidence or `not_relevant`. Whitespace is left out of the test because
chunkers differ in the spaces and line breaks they keep at their edges, and a blank line holds no answer.

Rank metrics count an unjudged hit as not relevant, as pooled evaluation does; the depth says how far to trust
that, per chunker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.evaluation.metrics import is_relevant
from core.ingest.datasets import extra_spans
from core.schema.questions import Question
from core.schema.spans import Span, subtract, union


def _unjudged_chars(hit: Span, judged: Sequence[Span], text: str | None) -> int:
    """Non-space characters of `hit` outside every judged span of its document (every character when the
    document's text is unknown)."""
    left = [(hit.start, hit.end)]
    for s, e in union((j.start, j.end) for j in judged if j.doc_id == hit.doc_id):
        left = subtract(left, (s, e))
    if text is None:
        return sum(b - a for a, b in left)
    return sum(1 for a, b in left for ch in text[a:b] if not ch.isspace())


def is_judged(hit: Span, question: Question, texts: Mapping[str, str]) -> bool:
    """Whether the question's judgments say anything about `hit` (see the module docstring)."""
    if any(is_relevant(hit, r) for r in question.references):
        return True
    judged = [*question.references, *extra_spans(question, "not_relevant")]
    return _unjudged_chars(hit, judged, texts.get(hit.doc_id)) == 0


@dataclass(frozen=True)
class PoolDepth:
    judged: int  # hits of the top k with a judgment
    shown: int  # hits of the top k (fewer than k when the index holds fewer)

    @property
    def label(self) -> str:
        return f"{self.judged}/{self.shown}"


def pool_depth(hits: Sequence[Span], question: Question, texts: Mapping[str, str], k: int) -> PoolDepth:
    top = hits[:k]
    return PoolDepth(sum(1 for h in top if is_judged(h, question, texts)), len(top))
