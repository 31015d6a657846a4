"""Plotly figures (no Streamlit): the boundary timeline, size histograms, similarity curves, continuity strips,
metric charts. The app shows them (components/charts.py re-exports them) and the HTML report embeds them
(core/outputs/report_html.py)."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from core.evaluation.results import BenchReport, ChunkerReport, Metric
from core.evaluation.verdicts import IntervalRow
from core.outputs.pageview import Page, PlacedSpan
from core.schema.chunks import Chunk

COLOURS = ["#2563eb", "#f59e0b"]


def plotly_text(value: Any) -> str:
    """A document id or chunker name as a Plotly label shows it: plotly.js reads labels, ticks and hover texts as
    pseudo-HTML (links, styles), so a QA set's `<a href=...>` doc id would become a link; escaped, entities turn
    back into the characters."""
    return html.escape(str(value), quote=False)


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


def trace_curve(trace: Mapping[str, object], title: str) -> go.Figure:
    """Neighbour similarity (cosine) or distance (semantic) along the text, with the threshold line."""
    fig = go.Figure(go.Scatter(x=trace["positions"], y=trace["values"], mode="lines+markers", marker_size=3,
                               name=trace.get("kind", "value")))
    fig.add_hline(y=trace["threshold"], line_dash="dash", line_color="#dc2626",
                  annotation_text=trace.get("rule", "threshold"))
    fig.update_layout(height=260, margin={"l": 10, "r": 10, "t": 40, "b": 30}, title=title,
                      xaxis_title="character offset", yaxis_title=trace.get("kind", ""))
    return fig


def eos_curve(window: Mapping[str, object], scorer: str) -> go.Figure:
    """p(end of text) at each sentence end of one LGMGC window; the chosen split marked."""
    fig = go.Figure(go.Scatter(x=window["positions"], y=window["p"], mode="lines+markers", name="p(EOS)"))
    fig.add_vline(x=window["split"], line_color="#dc2626", annotation_text="split")
    fig.update_layout(height=260, margin={"l": 10, "r": 10, "t": 40, "b": 30},
                      title=f"Window {window['start']}–{window['end']}: {scorer}", xaxis_title="character offset",
                      yaxis_title="p(end of text)")
    return fig


def _stepped_scale(colours: Sequence[str]) -> list[list[Any]]:
    """A heat-map colour scale of flat steps: integer value i (zmin -0.5, zmax n - 0.5) gets colours[i]."""
    n = len(colours)
    steps: list[list[Any]] = []
    for i, colour in enumerate(colours):
        steps += [[i / n, colour], [(i + 1) / n, colour]]
    return steps


STRIP_COLOURS = {"start": "#6b7280", "found join": "#16a34a", "correct continue": "#d1d5db",
                 "false alarm": "#f59e0b", "missed join": "#dc2626"}


def continuity_strip(decisions: Sequence[Any], title: str) -> go.Figure:
    """One cell per window (`core.methods.chop.continuity.Decision`), coloured by how its decision compares with
    the true joins; hovering shows the decision, its reason and the text on both sides of the cut."""
    labels = list(STRIP_COLOURS)
    n = len(labels)
    steps = _stepped_scale(list(STRIP_COLOURS.values()))

    def side(text: str) -> str:
        return " ".join(text.split())[-90:].replace("<", "&lt;")

    hover = [f"window {d.index}: <b>{d.label}</b> ({'start' if d.decision is None else d.decision})"
             f"<br>{side(d.reason)}" + (f"<br>true join at {d.join}" if d.join is not None else "")
             + f"<br>…{side(d.before)} ┃ {' '.join(d.after.split())[:90].replace('<', '&lt;')}…" for d in decisions]
    fig = go.Figure(go.Heatmap(
        z=[[labels.index(d.label) for d in decisions]], text=[hover], hoverinfo="text", showscale=False,
        zmin=-0.5, zmax=n - 0.5, colorscale=steps, xgap=1,
    ))
    for label, colour in STRIP_COLOURS.items():  # a legend: one invisible trace per label
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                 marker={"color": colour, "size": 10, "symbol": "square"}))
    fig.update_layout(height=150, margin={"l": 10, "r": 10, "t": 40, "b": 20}, yaxis_visible=False,
                      title=title, xaxis_title="window", legend={"orientation": "h", "y": -0.4},
                      plot_bgcolor="white")
    return fig


def metric_vs_k(report: BenchReport, metric: Metric, template: str | None = None) -> go.Figure:
    """`template`: a Plotly template by name; None takes the process default (in the app, Streamlit's, whose
    colours are placeholders only its front end fills in: a figure for anywhere else must name one)."""
    rows = [{"chunker": name, "k": k, metric: r.at(metric, k)} for name, r in report.results.items() for k in report.ks]
    fig = px.line(pd.DataFrame(rows), x="k", y=metric, color="chunker", markers=True, template=template)
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 30}, title=f"{metric}@k")
    return fig


def bars(report: BenchReport, columns: Mapping[str, Callable[[ChunkerReport], float | None]], title: str,
         template: str | None = None) -> go.Figure:
    """One bar per chunker and column (a column: its label and what it reads of a result); `template` as for
    `metric_vs_k`."""
    rows = [{"chunker": name, "measure": label, "value": fn(r)} for name, r in report.results.items()
            for label, fn in columns.items()]
    fig = px.bar(pd.DataFrame(rows), x="chunker", y="value", color="measure", barmode="group", template=template)
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 30}, title=title)
    return fig


def collision_grid(rows: Sequence[Any], title: str = "Where each chunker's hits come from") -> go.Figure:
    """One row of cells per chunker (`core.evaluation.collisions.GridRow`): cell colour = source document,
    ★ = a document holding the answer, and the chunker's wrong_doc@k beside its name."""
    docs = sorted({d for r in rows for d in r.sources}) or [""]
    palette = px.colors.qualitative.Safe + px.colors.qualitative.Pastel
    k = max((len(r.sources) for r in rows), default=0)
    pad = [None] * k
    z = [([docs.index(d) for d in r.sources] + pad)[:k] for r in rows]
    text = [([("★ " if g else "") + plotly_text(d) for d, g in zip(r.sources, r.gold)] + [""] * k)[:k] for r in rows]
    hover = [([f"#{i + 1} from {plotly_text(d)}" + (" (holds the answer)" if g else "")
               for i, (d, g) in enumerate(zip(r.sources, r.gold))] + [""] * k)[:k] for r in rows]
    n = len(docs)
    steps = _stepped_scale([palette[i % len(palette)] for i in range(n)])  # each document one flat colour
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"#{i + 1}" for i in range(k)],
        y=[f"{plotly_text(r.chunker)}  (wrong_doc {r.wrong_doc:.2f})" for r in rows],
        text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text", showscale=False,
        colorscale=steps, zmin=-0.5, zmax=n - 0.5, xgap=2, ygap=2,
    ))
    fig.update_layout(height=80 + 34 * len(rows), margin={"l": 10, "r": 10, "t": 40, "b": 20}, title=title,
                      yaxis={"autorange": "reversed"})
    return fig


def collision_heatmap(chunkers: Sequence[str], docs: Sequence[str], matrix: Sequence[Sequence[float | None]]
                      ) -> go.Figure:
    """Chunker by gold document: the share of that document's questions whose top-1 hit came from elsewhere.
    Names are escaped here (`plotly_text`): callers pass them as they are."""
    fig = go.Figure(go.Heatmap(
        z=matrix, x=[plotly_text(d) for d in docs], y=[plotly_text(c) for c in chunkers],
        zmin=0, zmax=1, colorscale="Reds",
        text=[["" if v is None else f"{v:.2f}" for v in row] for row in matrix], texttemplate="%{text}",
        hovertemplate="%{y}<br>questions about %{x}: top-1 from another document %{z:.0%}<extra></extra>",
        colorbar={"title": "wrong doc"},
    ))
    fig.update_layout(height=120 + 34 * len(chunkers), margin={"l": 10, "r": 10, "t": 40, "b": 80},
                      title="Top-1 collisions: questions whose first hit comes from another document",
                      yaxis={"autorange": "reversed"})
    return fig


PAGE_COLOURS = ["#2563eb", "#f59e0b", "#16a34a", "#db2777", "#7c3aed", "#0891b2"]
EVIDENCE_COLOUR = "#dc2626"
#: one of Plotly's layout shapes as a dict (its type, corners, colours, and its line's colour, width and dash)
Shape = dict[str, str | float | dict[str, str | float]]


def page_figure(page: Page, placed: Sequence[PlacedSpan], evidence: Sequence[PlacedSpan] = (), title: str = "",
                height: int = 760) -> go.Figure:
    """A PDF page as an image with each placed chunk's boxes over it (colours cycle by chunk index) and gold
    evidence outlined in red dashes. Every box is covered by invisible points carrying the chunk's position in
    `placed`, so a click anywhere on a chunk selects it (Streamlit's selection returns points, not shapes)."""
    fig = go.Figure()
    fig.add_layout_image(source="data:image/png;base64," + base64.b64encode(page.png).decode("ascii"), xref="x",
                         yref="y", x=0, y=0, sizex=page.width, sizey=page.height, sizing="stretch", layer="below")
    shapes: list[Shape] = []  # set at once: add_shape per box costs ~25 ms each, a dense page a few seconds
    xs: list[float] = []
    ys: list[float] = []
    ids: list[int] = []
    hover: list[str] = []
    for i, p in enumerate(placed):
        colour = PAGE_COLOURS[(p.chunk.index if p.chunk else i) % len(PAGE_COLOURS)]
        tip = f"chunk {p.label} · {p.chunk.token_count if p.chunk else 0} tokens · characters {p.start}–{p.end}"
        for x0, y0, x1, y1 in p.boxes:
            shapes.append({"type": "rect", "x0": x0, "y0": y0, "x1": x1, "y1": y1, "fillcolor": colour,
                           "line": {"color": colour, "width": 1}, "opacity": 0.18})
            step = max(6.0, (y1 - y0) * 0.8)
            n = max(1, int((x1 - x0) / step))
            for k in range(n + 1):
                xs.append(x0 + (x1 - x0) * k / n)
                ys.append((y0 + y1) / 2)
                ids.append(i)
                hover.append(tip)
    shapes += [{"type": "rect", "x0": x0 - 2, "y0": y0 - 2, "x1": x1 + 2, "y1": y1 + 2,
                "line": {"color": EVIDENCE_COLOUR, "width": 2, "dash": "dash"}}
               for x0, y0, x1, y1 in (b for e in evidence for b in e.boxes)]
    fig.update_layout(shapes=shapes)
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", customdata=ids, hovertext=hover, hoverinfo="text",
                             marker={"size": 14, "opacity": 0, "color": "#000000"}, showlegend=False,
                             name="chunks"))
    labels = [p for p in placed if p.boxes]
    fig.add_trace(go.Scatter(
        x=[p.boxes[0][0] for p in labels], y=[p.boxes[0][1] for p in labels], mode="text",
        text=[p.label for p in labels], textposition="top right", hoverinfo="skip", showlegend=False,
        textfont={"size": 11, "color": [PAGE_COLOURS[(p.chunk.index if p.chunk else i) % len(PAGE_COLOURS)]
                                        for i, p in enumerate(labels)]}))
    fig.update_xaxes(range=[0, page.width], visible=False, constrain="domain")
    fig.update_yaxes(range=[page.height, 0], visible=False, scaleanchor="x", constrain="domain")
    fig.update_layout(height=height, margin={"l": 0, "r": 0, "t": 30 if title else 0, "b": 0}, title=title,
                      plot_bgcolor="white", paper_bgcolor="#eef0f3", dragmode=False, clickmode="event+select",
                      hovermode="closest")
    return fig


def interval_chart(rows: Sequence[IntervalRow], title: str, template: str | None = None) -> go.Figure:
    """Each chunker's figure as a dot with its 95 % interval as a bar (`core.evaluation.verdicts.interval_rows`):
    where two bars overlap a lot, the questions do not tell the chunkers apart. One colour per metric."""
    fig = go.Figure()
    metrics = list(dict.fromkeys(r.metric for r in rows))
    chunkers = list(dict.fromkeys(r.chunker for r in rows))
    for metric in metrics:
        mine = [r for r in rows if r.metric == metric]
        fig.add_trace(go.Scatter(
            x=[r.value for r in mine], y=[r.chunker for r in mine], mode="markers", name=metric,
            marker={"size": 9},
            error_x={"type": "data", "symmetric": False, "array": [r.high - r.value for r in mine],
                     "arrayminus": [r.value - r.low for r in mine], "thickness": 2, "width": 4},
            customdata=[[r.low, r.high] for r in mine],
            hovertemplate="%{y}<br>" + metric + " %{x:.3f} [%{customdata[0]:.2f}, %{customdata[1]:.2f}]"
                          "<extra></extra>",
        ))
    fig.update_layout(height=110 + len(chunkers) * (24 + 12 * len(metrics)),
                      margin={"l": 10, "r": 10, "t": 40, "b": 30}, title=title, template=template,
                      scattermode="group", xaxis={"range": [-0.02, 1.02], "title": "score (dot) and 95 % interval"},
                      yaxis={"autorange": "reversed", "categoryorder": "array", "categoryarray": chunkers},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def pair_matrix(matrix: Any, template: str | None = None) -> go.Figure:
    """Chunker by chunker (`core.evaluation.verdicts.PairMatrix`): how much the row is better than the column;
    ★ marks a difference the paired test calls real (Holm-corrected p < 0.05), the rest are within noise."""
    text = [["" if g is None else f"{g:+.2f}" + (" ★" if m else "") for g, m in zip(row, marks)]
            for row, marks in zip(matrix.gain, matrix.marked)]
    limit = max([abs(g) for row in matrix.gain for g in row if g is not None] + [0.05])
    fig = go.Figure(go.Heatmap(
        z=matrix.gain, x=matrix.chunkers, y=matrix.chunkers, zmin=-limit, zmax=limit, zmid=0, colorscale="RdBu",
        text=text, texttemplate="%{text}", hovertext=matrix.hover, hoverinfo="text", xgap=2, ygap=2,
        colorbar={"title": "row better by"},
    ))
    fig.update_layout(height=140 + 34 * len(matrix.chunkers), margin={"l": 10, "r": 10, "t": 40, "b": 80},
                      title=f"{matrix.metric}: row minus column (★ reliably apart)", template=template,
                      yaxis={"autorange": "reversed"})
    return fig
