"""Report fields: what a method adds to every chunker's result in a bench report (CHOP's CNM accuracy and
boundary scores, LGMGC's pass counts). A method registers a function here; the bench calls them all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.pipeline import ChunkRun
from core.schema.documents import Document

#: report_fields(documents, run) -> extra fields of one chunker's result in a bench report
ReportFields = Callable[[Sequence[Document], ChunkRun], dict[str, Any]]
REPORT_FIELDS: list[ReportFields] = []


def register_report_fields(fn: ReportFields) -> ReportFields:
    """Decorator for a method's report fields. Every bench result carries them, for every chunker (None or 0 where
    they do not apply), so the report's keys do not depend on which chunkers ran."""
    if fn not in REPORT_FIELDS:
        REPORT_FIELDS.append(fn)
    return fn


def report_fields(docs: Sequence[Document], run: ChunkRun) -> dict[str, Any]:
    """Every registered method's report fields for one chunk run."""
    out: dict[str, Any] = {}
    for fn in REPORT_FIELDS:
        out.update(fn(docs, run))
    return out
