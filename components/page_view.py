"""Chunk & compare's page view: an uploaded PDF's page with one or two chunkers' chunks drawn over it, and the
chunk a click picks (its text, what the embedder does not read, its prefix and continuity decision)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from components import charts
from components.html import chunk_spans_html, cnm_badges_html, md_escape
from core.ingest.library import Library
from core.methods.chop.cnm import ChopMeta
from core.outputs.pageview import (
    PageViewError,
    PlacedSpan,
    evidence_spans,
    load_page,
    place_chunks,
    place_spans,
    viewable,
)
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.questions import Question
from core.services import Services
from core.workbench import unread_parts


def show(library: Library, documents: Sequence[Document], questions: Sequence[Question],
         runs: Mapping[str, Sequence[Chunk]], services: Services) -> None:
    """The page view for the library's PDFs; `documents` are what the chunkers saw (the PDFs themselves, or a
    joined stream holding them) and `runs` their chunks by spec."""
    pdfs = viewable(library)
    if not pdfs:
        st.caption("The page view draws chunks on the pages of uploaded PDFs; this library has none (a PDF read "
                   "before the PDFium loader is listed once it is uploaded again).")
        return
    titles = {d.doc_id: d.title for d, _ in pdfs}
    c1, c2, c3 = st.columns([2, 1, 3])
    doc_id = c1.selectbox("PDF", list(titles), format_func=titles.__getitem__, key="page-doc")
    source, path = next((d, p) for d, p in pdfs if d.doc_id == doc_id)
    number = int(c2.number_input(f"Page (of {len(source.page_starts)})", 1, len(source.page_starts), 1,
                                 key=f"page-no-{doc_id}"))
    chosen = c3.multiselect("Chunkers on the page (one or two)", list(runs), default=list(runs)[:2],
                            max_selections=2, key="page-specs")
    try:
        page = load_page(source, path, number)
    except (PageViewError, OSError) as exc:
        st.warning(md_escape(str(exc)))
        return
    holder = next((d for d in documents if d.doc_id == source.doc_id or
                   any(s.doc_id == source.doc_id for s in d.segments)), None)
    if holder is None:
        st.info("Run the chunkers on this library to see their chunks on the page.")
        return
    evidence = place_spans(page, evidence_spans(questions, holder, source))
    st.caption("Each chunk is a set of coloured boxes over the lines it covers (its number at the top left); click a "
               "chunk to read it." + (" Red dashes: gold evidence." if evidence else ""))
    for col, spec in zip(st.columns(max(1, len(chosen))), chosen):
        with col:
            placed = place_chunks(page, runs[spec], holder, source)
            key = f"page-fig-{spec}"  # the figure must not change with the click, or Streamlit drops the selection
            st.markdown(f"**{md_escape(spec)}**: {len(placed)} chunk(s) on page {number}")
            event = st.plotly_chart(charts.page_figure(page, placed, evidence), width="stretch",
                                    on_select="rerun", selection_mode="points", key=key,
                                    config={"displayModeBar": False})
            picked = _picked(event, len(placed))
            if picked is not None:
                _chunk_card(holder, source, placed[picked], services)


def _picked(event: object, count: int) -> int | None:
    """The chunk position a click selected (points carry it as customdata), or None."""
    try:
        points = event["selection"]["points"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    for point in points:
        value = point.get("customdata")
        value = value[0] if isinstance(value, list) else value
        if isinstance(value, int) and 0 <= value < count:
            return value
    return None


def _chunk_card(doc: Document, source: Document, placed: PlacedSpan, services: Services) -> None:
    """The clicked chunk: where it lies, its prefix, CNM tags and continuity decision, and its text with the part
    the embedder never reads greyed (`doc` is the document the chunk was cut from, `source` the PDF)."""
    chunk = placed.chunk
    if chunk is None:
        return
    pages = source.pages_of(placed.start, placed.end)
    where = f"pages {pages[0]}–{pages[1]}" if pages and pages[0] != pages[1] else f"page {pages[0]}" if pages else ""
    st.markdown(f"**Chunk {md_escape(chunk.chunk_id)}** · {chunk.token_count} tokens · characters "
                f"{chunk.start}–{chunk.end}" + (f" · {where}" if where else ""))
    if chunk.prefix:
        st.markdown(f"Prefix ({chunk.prefix_place} the text): `{md_escape(chunk.prefix)}`")
    mark = ChopMeta.of(chunk)
    if mark.cnm is not None:
        st.html(cnm_badges_html(mark.cnm, mark.source, mark.sources))
    if mark.continuity is not None:
        st.markdown(f"Continuity: **{md_escape(str(mark.continuity))}**"
                    + (f" ({md_escape(mark.reason)})" if mark.reason else ""))
    st.html(chunk_spans_html(doc.text, [chunk], chunk.start, chunk.end, unread_parts(services, [chunk])))
