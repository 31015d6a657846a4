"""CHOP's fields in a bench report: how well its continuity decisions find the true joins of joined streams."""

from __future__ import annotations

from collections.abc import Sequence

from core.evaluation.fields import FieldShow, register_report_fields
from core.methods.chop.continuity import BoundaryScores, decisions_of, score_boundaries
from core.schema.documents import Document
from core.schema.runs import ChunkedRun


@register_report_fields(shows=[FieldShow("boundary_f1", "boundary F1", better="max", rank=10, headline=True)])
def boundary_metrics(documents: Sequence[Document], run: ChunkedRun) -> dict[str, float | None]:
    """Precision / recall / F1 of FALSE continuity decisions against the true joins (None where no run made
    decisions over a joined stream)."""
    streams = [d for d in documents if d.joins]
    chunks = run.chunks
    if not streams or not any("continuity" in c.meta for c in chunks):
        return {"boundary_precision": None, "boundary_recall": None, "boundary_f1": None}
    predicted = true = matched = 0
    for doc in streams:
        own = [c for c in chunks if c.doc_id == doc.doc_id]
        s = score_boundaries([c.end for c in own], decisions_of(own), doc.joins)
        predicted, true, matched = predicted + s.predicted, true + s.true, matched + s.matched
    total = BoundaryScores(predicted, true, matched)
    return {"boundary_precision": total.precision, "boundary_recall": total.recall, "boundary_f1": total.f1}

