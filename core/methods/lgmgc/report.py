"""LGMGC's fields in a bench report: the scorer's work (forward passes, windows, words per second) and where the
logits-guided chunker cut. Zero or None for chunkers that score nothing."""

from __future__ import annotations

from collections.abc import Sequence

from core.evaluation.fields import FieldShow, register_report_fields
from core.infra.jsonio import JsonObject, count_in
from core.methods.lgmgc.chunker import split_statistics
from core.schema.documents import Document
from core.schema.runs import ChunkedRun


@register_report_fields(shows=[
    FieldShow("forward_passes_per_1k_words", "passes/1k words", place="cost", rank=10, command_line=False),
    FieldShow("forward_passes", "forward passes", place="cost", rank=11, markdown=False,
              shown_when=lambda r: bool(r.get("forward_passes"))),
])
def scoring_fields(documents: Sequence[Document], run: ChunkedRun) -> JsonObject:
    traces = list(run.traces.values())
    passes = sum(count_in(t, "forward_passes") for t in traces)
    # a cold run costs one forward pass per scored window; `forward_passes` counts the passes this process ran
    # (lgmgc after lg with the same θ reuses every window, so it runs none)
    windows = sum(count_in(t, "windows_scored") if "windows_scored" in t else count_in(t, "forward_passes")
                  for t in traces)
    words = sum(count_in(t, "words") for t in traces)
    return {
        "forward_passes": passes,
        "windows_scored": windows,
        "forward_passes_per_1k_words": 1000 * windows / words if words else None,
        "words_per_second": words / run.seconds if words and run.seconds and not run.from_cache else None,
        "lg_splits": None if (splits := split_statistics(traces)) is None else dict(splits),
    }

