"""How Chunk & compare draws what a chunker recorded about its decisions (`Chunking.trace`), by the trace's
`kind`: neighbour similarity or distance curves, LGMGC's p(end of text) per window, CHOP's CNM prefixes and
continuity decisions. A new method with its own view adds a function here and names its kind in `VIEWS`; a
multi-granular run (one with children) also gets its parent / children view, whatever its kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from components import charts
from components.html import chunk_spans_html, cnm_badges_html, esc, md_escape
from core.methods.chop.accuracy import cnm_accuracy
from core.methods.chop.cnm import ChopMeta
from core.methods.chop.continuity import judge_run
from core.schema.documents import Document
from core.schema.runs import ChunkedRun


def _curve(spec: str, trace: dict[str, Any], run: ChunkedRun, doc: Document, start: int, window: int) -> None:
    if trace.get("values"):
        st.plotly_chart(charts.trace_curve(trace, f"{spec}: neighbour {trace['kind']}"), width="stretch",
                        key=f"curve-{spec}")


def _eos(spec: str, trace: dict[str, Any], run: ChunkedRun, doc: Document, start: int, window: int) -> None:
    if not trace.get("windows"):
        return
    st.subheader(f"{md_escape(spec)}: p(end of text) per window")
    scored = [w for w in trace["windows"] if w["positions"]]
    if scored:
        n = st.number_input(f"Window ({len(scored)} scored)", 1, len(scored), 1, key=f"win-{spec}") - 1
        st.plotly_chart(charts.eos_curve(scored[n], trace.get("scorer", "")), width="stretch", key=f"eos-{spec}")
    st.caption(f"{trace.get('forward_passes', 0)} forward passes for {trace.get('words', 0):,} words")


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _continuity(spec: str, trace: dict[str, Any], run: ChunkedRun, doc: Document, start: int, window: int) -> None:
    st.subheader(f"{md_escape(spec)}: CNM prefixes and continuity")
    own = [c for c in run.chunks if c.doc_id == doc.doc_id]
    judged, b = judge_run(doc, own)
    if b is not None:
        counts = {label: sum(d.label == label for d in judged) for label in ("found join", "missed join",
                                                                              "false alarm")}
        st.markdown(f"**Boundary precision {b.precision:.2f} · recall {b.recall:.2f} · F1 {b.f1:.2f}** "
                    f"against the {len(doc.joins)} true joins: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        title = "Continuity decisions against the true joins"
    else:
        title = "Continuity decisions (a separate document: any FALSE is a false alarm)"
    tags = cnm_accuracy(own, [doc])
    if tags is not None:
        st.caption(f"CNM tags against the gold tags ({tags.chunks} chunks): category "
                   f"{_share(tags.category_accuracy)} · model {_share(tags.model_accuracy)} · empty "
                   f"{_share(tags.empty_rate)}")
    st.plotly_chart(charts.continuity_strip(judged, title), width="stretch", key=f"strip-{spec}")
    for c in own:
        mark = ChopMeta.of(c)
        if start <= c.start < start + window or mark.source != "inherited":
            label = "start" if mark.continuity is None else ("TRUE" if mark.continuity else "FALSE")
            why = "" if mark.continuity is not False else \
                f' <span style="font-size:0.75rem">{esc(mark.reason)}</span>'
            st.html(f'<div style="margin:2px 0"><b>#{c.index}</b> <code>{label}</code>{why} '
                    f'{cnm_badges_html(mark.cnm, mark.source, mark.sources)}'
                    '</div>')


def _children(spec: str, run: ChunkedRun, doc: Document) -> None:
    children = [c for c in run.children() if c.doc_id == doc.doc_id]
    if not children:
        return
    parents = [c for c in run.parents() if c.doc_id == doc.doc_id]
    pick = st.selectbox(f"{spec}: a parent and its children", [c.chunk_id for c in parents], key=f"par-{spec}")
    parent = next(c for c in parents if c.chunk_id == pick)
    for level in ("h", "q"):
        kids = [c for c in children if c.parent_id == pick and c.child.startswith(level)]
        st.markdown(f"children of at most θ/{2 if level == 'h' else 4} words: {len(kids)}")
        st.html(chunk_spans_html(doc.text, kids, parent.start, parent.end))


View = Callable[[str, dict[str, Any], ChunkedRun, Document, int, int], None]
VIEWS: dict[str, View] = {"similarity": _curve, "distance": _curve, "eos": _eos, "continuity": _continuity}


def draw_run(spec: str, run: ChunkedRun, doc: Document, start: int, window: int) -> None:
    """Everything the run recorded about `doc` that has a view; `start`/`window` is the text range on show."""
    trace = run.traces.get(doc.doc_id, {})
    kind = trace.get("kind")
    view = VIEWS.get(kind) if isinstance(kind, str) else None
    if view is not None:
        view(spec, trace, run, doc, start, window)
    _children(spec, run, doc)
