"""Plotly figures: the boundary timeline, size histograms, similarity curves, continuity strips, metric charts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from core.chunkers.base import Chunk

COLOURS = ["#2563eb", "#f59e0b"]


def boundary_timeline(runs: Mapping[str, Sequence[Chunk]], doc_id: str, length: int, joins: Sequence[int] = (),
                      gold: Sequence[tuple[int, int]] = ()) -> go.Figure:
    """Every chunker's chunks of one document on a shared character axis; joins dashed, gold spans shaded."""
    fig = go.Figure()
    for name, chunks in runs.items():
        own = [c for c in chunks if c.doc_id == doc_id]
        for parity in (0, 1):
            part = [c for c in own if c.index % 2 == parity]
            fig.add_trace(go.Bar(
                y=[name] * len(part), x=[c.end - c.start for c in part], base=[c.start for c in part],
                orientation="h", marker_color=COLOURS[parity], opacity=0.55, showlegend=False,
                customdata=[[c.index, c.start, c.end, c.token_count] for c in part],
                hovertemplate="chunk %{customdata[0]}<br>%{customdata[1]}–%{customdata[2]}"
                              "<br>%{customdata[3]} tokens<extra>" + name + "</extra>",
            ))
    for j in joins:
        fig.add_vline(x=j, line_dash="dash", line_color="#dc2626")
    for s, e in gold:
        fig.add_vrect(x0=s, x1=e, fillcolor="#16a34a", opacity=0.25, line_width=0)
    fig.update_layout(barmode="overlay", height=90 + 42 * len(runs), margin={"l": 10, "r": 10, "t": 30, "b": 30},
                      xaxis={"title": "character offset", "range": [0, length]},
                      title="Chunk boundaries (red dashes: document joins, green: gold evidence)")
    return fig


def size_histogram(runs: Mapping[str, Sequence[Chunk]]) -> go.Figure:
    rows = [{"chunker": name, "tokens": c.token_count} for name, chunks in runs.items() for c in chunks]
    fig = px.histogram(pd.DataFrame(rows), x="tokens", color="chunker", barmode="overlay", nbins=40, opacity=0.6)
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 30}, title="Chunk sizes (tokens)")
    return fig


def trace_curve(trace: dict[str, Any], title: str) -> go.Figure:
    """Neighbour similarity (cosine) or distance (semantic) along the text, with the threshold line."""
    fig = go.Figure(go.Scatter(x=trace["positions"], y=trace["values"], mode="lines+markers", marker_size=3,
                               name=trace.get("kind", "value")))
    fig.add_hline(y=trace["threshold"], line_dash="dash", line_color="#dc2626",
                  annotation_text=trace.get("rule", "threshold"))
    fig.update_layout(height=260, margin={"l": 10, "r": 10, "t": 40, "b": 30}, title=title,
                      xaxis_title="character offset", yaxis_title=trace.get("kind", ""))
    return fig


def eos_curve(window: dict[str, Any], scorer: str) -> go.Figure:
    """p(end of text) at each sentence end of one LGMGC window; the chosen split marked."""
    fig = go.Figure(go.Scatter(x=window["positions"], y=window["p"], mode="lines+markers", name="p(EOS)"))
    fig.add_vline(x=window["split"], line_color="#dc2626", annotation_text="split")
    fig.update_layout(height=260, margin={"l": 10, "r": 10, "t": 40, "b": 30},
                      title=f"Window {window['start']}–{window['end']}: {scorer}", xaxis_title="character offset",
                      yaxis_title="p(end of text)")
    return fig


def continuity_strip(chunks: Sequence[Chunk]) -> go.Figure:
    """One cell per chunk: continues (TRUE), new document (FALSE), or first chunk."""
    values, text = [], []
    for c in chunks:
        d = c.meta.get("continuity")
        values.append(0.5 if d is None else (1.0 if d else 0.0))
        reason = c.meta.get("continuity_reason") or ""
        model = (c.meta.get("cnm") or {}).get("model")
        text.append(f"chunk {c.index}: {'start' if d is None else ('TRUE' if d else 'FALSE')}<br>{reason}"
                    f"<br>model: {model}")
    fig = go.Figure(go.Heatmap(z=[values], text=[text], hoverinfo="text", showscale=False, zmin=0, zmax=1,
                               colorscale=[[0, "#dc2626"], [0.5, "#9ca3af"], [1, "#16a34a"]], xgap=1))
    fig.update_layout(height=110, margin={"l": 10, "r": 10, "t": 30, "b": 20}, yaxis_visible=False,
                      title="Continuity decisions (green TRUE, red FALSE = new document)", xaxis_title="chunk")
    return fig


def metric_vs_k(report: dict[str, Any], metric: str) -> go.Figure:
    rows = [{"chunker": name, "k": k, metric: r[f"{metric}@{k}"]}
            for name, r in report["results"].items() for k in report["k"]]
    fig = px.line(pd.DataFrame(rows), x="k", y=metric, color="chunker", markers=True)
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 30}, title=f"{metric}@k")
    return fig


def bars(report: dict[str, Any], columns: Mapping[str, Any], title: str) -> go.Figure:
    rows = [{"chunker": name, "measure": label, "value": fn(r)} for name, r in report["results"].items()
            for label, fn in columns.items()]
    fig = px.bar(pd.DataFrame(rows), x="chunker", y="value", color="measure", barmode="group")
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 30}, title=title)
    return fig
