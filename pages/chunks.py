"""Chunk & compare: every chunker on the same text, side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import charts, code_snippets, page_view, state, traces
from components.html import chunk_spans_html, md_escape
from components.live_results import live_status
from core.chunkers.registry import available
from core.infra.errors import ChunkLensError
from core.outputs.export import records, to_csv, to_jsonl
from core.outputs.report_pages import app_settings, chunking_report_html
from core.schema.chunks import shown_notes
from core.workbench import DEFAULT_SPECS, MORE_SPECS, run_chunkers, run_summaries, unread_parts
from core.workbench.live import RunSoFar, gold_spans

state.through_app()
st.header("Chunk & compare")
corpus = state.corpus()
if not corpus.documents:
    st.info("Add documents on the Documents page first.")
    st.stop()
services = state.services()
if services is None:
    st.stop()

options = list(dict.fromkeys(DEFAULT_SPECS + MORE_SPECS + st.session_state.get("specs", [])))
chosen = st.multiselect("Chunkers", options, default=st.session_state.get("specs", DEFAULT_SPECS),
                        help=f"Built-in: {', '.join(available())}")
extra = st.text_input("More chunkers with parameters (comma separated)", "",
                      placeholder="recursive:theta=300, cosine:max_tokens=300, chop:prefix=after")
specs = list(dict.fromkeys(chosen + [s.strip() for s in extra.split(",") if s.strip()]))
st.session_state["specs"] = specs

doc_ids = [d.doc_id for d in corpus.documents]
picked = st.session_state.get("chunks-doc")
doc_id = picked if picked in doc_ids else doc_ids[0]  # the Document picked below, which the run's timeline shows
doc = next(d for d in corpus.documents if d.doc_id == doc_id)
gold = gold_spans(corpus.questions, doc_id)

if st.button("Run chunkers", type="primary", disabled=not specs):
    with live_status("Chunking and indexing…", RunSoFar(services, specs, corpus.documents), doc, gold) as (
            status, live):
        try:
            results = run_chunkers(services, corpus, specs, live.progress, max_specs=state.max_specs(),
                                   on_result=live.add)
        except ChunkLensError as exc:
            live.clear()
            status.update(label=md_escape(str(exc)), state="error")
            st.stop()
        live.clear()
        state.store_runs(corpus, results)
        failed = [r for r in results.values() if r.error]
        status.update(label=f"Ran {len(results) - len(failed)} chunker(s)" + (f", {len(failed)} failed" if failed
                      else ""), state="error" if failed else "complete", expanded=bool(failed))

results = state.runs(corpus)
for r in results.values():
    if r.error:
        st.error(f"{md_escape(r.spec)}: {md_escape(r.error)}")  # the error may quote a server's reply
ok = {s: r for s, r in results.items() if r.ok}
made = {s: r.run for s, r in ok.items() if r.run is not None}  # every run that is ok: its chunks
for spec, run in made.items():
    if notes := shown_notes(ok[spec].spec, run.notes()):  # what a chunker did that its name does not say
        st.info("  \n".join(md_escape(line) for line in notes))
if not ok:
    st.info("Pick chunkers and press Run.")
    st.stop()

summary = run_summaries(services, ok, corpus.documents)
st.dataframe(pd.DataFrame([line.row() for line in summary.values()]), hide_index=True, width="stretch", column_config={
    "unread by embedder": st.column_config.NumberColumn(
        format="percent", help="The share of each chunker's embedded text past the embedder's input limit (256 "
        "word pieces for the MiniLM, under the 'truncate' long-text policy): no vector reads it; BM25 does."),
    "dropped text": st.column_config.NumberColumn(
        format="percent", help="The share of the documents' non-space characters that no chunk covers."),
    "altered chunks": st.column_config.NumberColumn(
        format="percent", help="For a library's splitter (a peer): the share of its chunks whose text differs from "
        "the document's beyond whitespace. Each chunk is the exact source range either way; empty for ChunkLens's "
        "own chunkers, whose chunks are the document's text.")})
export = list(records({s: run.chunks for s, run in made.items()}, corpus.documents))
e1, e2, _ = st.columns([1, 1, 3])
e1.download_button("Export chunks (JSONL)", to_jsonl(export), "chunklens-chunks.jsonl", "application/jsonl",
                   help="One line per chunk: {id, page_content, metadata}; loads as LangChain Document(**line)")
e2.download_button("Export chunks (CSV)", to_csv(export), "chunklens-chunks.csv", "text/csv")
code_snippets.show(ok)

if len(doc_ids) > 1:
    doc_id = st.selectbox("Document", doc_ids, key="chunks-doc")
    doc = next(d for d in corpus.documents if d.doc_id == doc_id)
    gold = gold_spans(corpus.questions, doc_id)
runs = {s: run.parents() for s, run in made.items()}
st.download_button(
    "Download report", lambda: chunking_report_html(
        summary, corpus.documents,
        app_settings(services, ok, state.retrieval(), corpus.joined), runs, doc_id),
    "chunklens-chunks.html", "text/html", help="One HTML file that opens offline: settings and versions, the "
    "summary table with a paragraph on what it shows, and this document's boundary timeline and size histogram")
st.plotly_chart(charts.boundary_timeline(runs, doc_id, len(doc.text), doc.joins, gold), width="stretch")
st.plotly_chart(charts.size_histogram(runs), width="stretch")

st.subheader("Chunks on the page")
page_view.show(state.library(), corpus.documents, corpus.questions, {s: run.parents() for s, run in made.items()},
               services)

st.subheader("Text, chunk by chunk")
window = 6000
start = st.slider("Start of the shown text (character)", 0, max(0, len(doc.text) - 1), 0, step=500)
shown = st.multiselect("Side by side", list(ok), default=list(ok)[:3], max_selections=4)
st.caption("Grey, struck through with dots: the part of a chunk past the embedder's input limit, which no vector "
           "reads (BM25 does); hover for the word pieces left out.")
end = min(len(doc.text), start + window)
for col, spec in zip(st.columns(max(1, len(shown))), shown):
    with col:
        st.markdown(f"**{md_escape(spec)}**")
        own = [c for c in made[spec].parents() if c.doc_id == doc_id]
        visible = [c for c in own if c.end > start and c.start < end]
        st.html(chunk_spans_html(doc.text, own, start, end, unread_parts(services, visible)))

first_of: dict[str, str] = {}  # run identity -> the first spec that made it (retrieval-only variants share it)
for spec, run in made.items():
    same = first_of.setdefault(run.identity, spec)
    if same != spec:
        st.caption(md_escape(f"{spec}: same chunks as {same}") + " (only the retrieval differs), shown above.")
        continue
    traces.draw_run(spec, run, doc, start, window)
