"""Chroma's chunking evaluation, the parts ChunkLens's span metrics did not have: Precision_Omega, `retrieve=-1`
(as many chunks as hold a question's evidence) and means per corpus. Pure functions, no I/O.

The rules are those of brandonstarxel/chunking_evaluation, evaluation_framework/base_evaluation.py (commit
d451fc4), read line by line, so a figure here stands beside Chroma's published ones:

- a chunk *holds evidence* when it meets a reference of its own document, ends included: Chroma's
  `intersect_two_ranges` takes `start <= end`, so a chunk ending exactly where a reference starts counts (it adds
  no character to the numerator, but it is one more chunk, and its characters join Precision_Omega's denominator);
- Precision_Omega = the reference characters those chunks cover (each character once) / the union of those
  chunks and of the reference characters no chunk covers (overlapping chunks count once here, unlike precision's
  denominator, `core.evaluation.metrics.span_scores`, which sums the retrieved chunks' lengths as Chroma does);
- `retrieve=-1` asks each question for as many chunks as hold its evidence, at most `EVIDENCE_CAP` (Chroma
  queries `min(20, max count)` results and scores each question's first `count`), then scores recall, precision
  and IoU over those chunks exactly as at a fixed k.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from core.evaluation.metrics import span_scores
from core.schema.spans import Interval, Span, subtract, total, union

#: Chroma's ceiling on the chunks `retrieve=-1` asks for (`maximum_n = min(20, max(highlighted_chunks_count))`)
EVIDENCE_CAP = 20
#: the per-question figures the protocol adds, beside span_recall@k, span_precision@k and span_iou@k
OMEGA = "span_precision_omega"
EVIDENCE_KEYS = ("span_recall_evidence", "span_precision_evidence", "span_iou_evidence")


class Evidence(NamedTuple):
    chunks: int  # how many chunks of the index hold the question's evidence (Chroma's highlighted_chunk_count)
    precision_omega: float  # the best precision this chunking allows: every evidence chunk retrieved, nothing else


class EvidenceIndex:
    """An index's chunk spans by document, sorted by start, to find the chunks that meet a reference quickly."""

    def __init__(self, index_spans: Sequence[Span]) -> None:
        by_doc: dict[str, list[Span]] = defaultdict(list)
        for s in index_spans:
            by_doc[s.doc_id].append(s)
        self._spans = {d: sorted(spans, key=lambda s: (s.start, s.end)) for d, spans in by_doc.items()}
        self._starts = {d: [s.start for s in spans] for d, spans in self._spans.items()}
        self._longest = {d: max(s.end - s.start for s in spans) for d, spans in self._spans.items()}

    def meeting(self, ref: Span) -> list[int]:
        """Positions (in the document's sorted list) of the chunks that meet `ref`, ends included."""
        spans = self._spans.get(ref.doc_id)
        if not spans:
            return []
        starts = self._starts[ref.doc_id]
        lo = bisect.bisect_left(starts, ref.start - self._longest[ref.doc_id])
        hi = bisect.bisect_right(starts, ref.end)
        return [i for i in range(lo, hi) if spans[i].end >= ref.start]

    def evidence(self, refs: Sequence[Span]) -> Evidence:
        """How many chunks hold the evidence of `refs`, and Precision_Omega over them (0.0 when none covers a
        character of it)."""
        held: dict[str, set[int]] = defaultdict(set)
        covered: dict[str, list[Interval]] = defaultdict(list)
        for ref in refs:
            for i in self.meeting(ref):
                held[ref.doc_id].add(i)
                chunk = self._spans[ref.doc_id][i]
                s, e = max(chunk.start, ref.start), min(chunk.end, ref.end)
                if e > s:
                    covered[ref.doc_id].append((s, e))
        numerator = sum(total(union(parts)) for parts in covered.values())
        if not numerator:
            return Evidence(sum(len(h) for h in held.values()), 0.0)
        denominator = 0
        for doc in {r.doc_id for r in refs}:
            unused: list[Interval] = [(r.start, r.end) for r in refs if r.doc_id == doc]
            for cut in covered.get(doc, []):
                unused = subtract(unused, cut)
            chunks = [(self._spans[doc][i].start, self._spans[doc][i].end) for i in held.get(doc, ())]
            denominator += total(union([*chunks, *unused]))
        return Evidence(sum(len(h) for h in held.values()), numerator / denominator)


def precision_omega(index_spans: Sequence[Span], refs: Sequence[Span]) -> float:
    """Chroma's Precision_Omega of one question over an index's chunks (see the module's docstring)."""
    return EvidenceIndex(index_spans).evidence(refs).precision_omega


def evidence_scores(index: EvidenceIndex, refs: Sequence[Span], retrieved: Sequence[Span]) -> dict[str, float]:
    """One question's Chroma figures that no cut-off k gives: Precision_Omega, the number of evidence chunks, and
    recall / precision / IoU over the first that many retrieved chunks (`retrieve=-1`, at most EVIDENCE_CAP)."""
    found = index.evidence(refs)
    scores = span_scores(retrieved[: min(found.chunks, EVIDENCE_CAP)], refs)
    return {OMEGA: found.precision_omega, "evidence_chunks": float(found.chunks),
            "span_recall_evidence": scores.recall, "span_precision_evidence": scores.precision,
            "span_iou_evidence": scores.iou}


def corpus_of(refs: Sequence[Span], source_of=lambda s: s.doc_id) -> str:
    """The corpus a question is about: its references' document (several joined by '+', sorted)."""
    return "+".join(sorted({source_of(r) for r in refs})) or "(no reference)"


def per_corpus(corpora: Sequence[str], per_question: Mapping[str, Sequence[float]],
               intervals_of) -> dict[str, dict[str, object]]:
    """Every per-question metric's mean over each corpus's questions, with its standard deviation where Chroma
    reports one (`<metric>_std`, numpy's population std as in Chroma's code) and its 95 % interval
    (`intervals_of`: `core.evaluation.bench.with_intervals`); corpora in the order their first question comes."""
    groups: dict[str, list[int]] = {}
    for i, corpus in enumerate(corpora):
        groups.setdefault(corpus, []).append(i)
    out: dict[str, dict[str, object]] = {}
    for corpus, rows in groups.items():
        picked = {m: [values[i] for i in rows] for m, values in per_question.items()}
        entry: dict[str, object] = {"n_questions": len(rows)}
        entry.update({m: float(np.mean(v)) for m, v in picked.items()})
        entry.update({f"{m}_std": float(np.std(v)) for m, v in picked.items() if m.startswith("span_")})
        entry.update(intervals_of(picked))
        out[corpus] = entry
    return out


def headline(ks: Sequence[int]) -> list[str]:
    """The metrics the protocol's paired tests add to the default ones: Chroma's four at the largest k, and the
    `retrieve=-1` three."""
    hi = max(ks)
    return [f"span_precision@{hi}", f"span_iou@{hi}", OMEGA, *EVIDENCE_KEYS]
