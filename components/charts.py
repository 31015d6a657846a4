"""The app's Plotly figures. They are plain Plotly (no Streamlit) and live in `core.outputs.figures`, where the
HTML report (core/outputs/report_html.py) draws them too; this module re-exports them for the pages and
components."""

from __future__ import annotations

from core.outputs.figures import (
    COLOURS,
    STRIP_COLOURS,
    bars,
    boundary_timeline,
    collision_grid,
    collision_heatmap,
    continuity_strip,
    eos_curve,
    interval_chart,
    metric_vs_k,
    page_figure,
    pair_matrix,
    size_histogram,
    trace_curve,
)

__all__ = ["COLOURS", "STRIP_COLOURS", "bars", "boundary_timeline", "collision_grid", "collision_heatmap",
           "continuity_strip", "eos_curve", "interval_chart", "metric_vs_k",
           "page_figure", "pair_matrix", "size_histogram", "trace_curve"]
