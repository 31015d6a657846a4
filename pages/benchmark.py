"""Benchmark: the evaluation behind `python -m core bench`, on the loaded QA set or an uploaded one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
import streamlit as st

from components import charts, judged_panel, state
from components.html import md_escape
from components.progress import progress_status
from core.evaluation.collisions import top1_collisions
from core.evaluation.results import BenchReport, ChunkerReport
from core.evaluation.verdicts import closest_gap, compared_metrics, interval_rows, lower_is_better, pair_matrix
from core.infra.errors import ChunkLensError, SetExists
from core.infra.jsonio import JsonObject
from core.infra.uploads import limit_mb, read_upload
from core.ingest.datasets import MAX_QA_BYTES
from core.outputs.report_html import render_html
from core.settings import parse_ks
from core.workbench import DEFAULT_SPECS, benchmark, question_cap_line


def _wrong_doc_at(k: int) -> Callable[[ChunkerReport], float]:
    """A bar column: the share of a chunker's top k from a document without the answer (0 where not measured)."""
    return lambda r: r.at("wrong_doc", k) or 0.0


def _stage_seconds(stage: str) -> Callable[[ChunkerReport], float | None]:
    """A bar column: a chunker's seconds in one stage (none where the stage did not run)."""
    return lambda r: r.seconds.get(stage)


state.through_app()
st.header("Benchmark")
services = state.services()
if services is None:
    st.stop()
lib = state.library()
dataset = lib.dataset()

with st.expander("Use another qa-spans v1 set"):
    name = st.text_input("Name", "my-set")
    qa_mb = limit_mb(MAX_QA_BYTES)
    corpus_file = st.file_uploader("corpus.jsonl", type=["jsonl"], key="bench-corpus", max_upload_size=qa_mb)
    questions_file = st.file_uploader("questions.jsonl", type=["jsonl"], key="bench-questions", max_upload_size=qa_mb)

    def load_set(replace: bool):
        """The library's QA set after loading the upload; a set of the same name is replaced only once the user
        confirmed (the library raises SetExists until then)."""
        if corpus_file is None or questions_file is None:  # its buttons are enabled only with both files
            return None
        try:
            corpus, questions = (read_upload(f, f.name, MAX_QA_BYTES, "QA sets") for f in (corpus_file, questions_file))
            loaded = lib.load_uploaded_dataset(name, corpus, questions, replace=replace)
        except SetExists as exc:
            st.session_state["replace_set"] = str(exc)
            st.rerun()
        except ChunkLensError as exc:
            st.error(md_escape(str(exc)))
            return None
        st.success(md_escape(loaded.message()))
        return lib.dataset()

    ready = bool(corpus_file and questions_file)
    if st.session_state.get("replace_set") and ready:
        st.warning(f"{md_escape(st.session_state['replace_set'])}. Replace it? Its questions are lost; the documents "
                   "stay.")
        yes, no = st.columns(2)
        if yes.button("Yes, replace the set", type="primary"):
            st.session_state.pop("replace_set")
            dataset = load_set(replace=True) or dataset
        if no.button("Cancel", key="replace_set_cancel"):
            st.session_state.pop("replace_set")
            st.rerun()
    elif st.button("Load this set", disabled=not ready):
        dataset = load_set(replace=False) or dataset
judged_panel.render(lib)
dataset = lib.dataset() if dataset is None else dataset  # an import above may have brought the first questions

if not lib.documents():
    st.info("The library is empty: upload manuals or load the sample set on the Documents page.")
    st.stop()
if dataset is None or not dataset.questions:
    st.info("A benchmark needs questions with gold spans: judge the hits of a question on the Query page (it joins "
            "this library's own set), load the sample set (Documents page), or a qa-spans v1 set above.")
    st.stop()

st.caption(f"{md_escape(dataset.name)}: {len(dataset.documents)} documents, {len(dataset.questions)} questions")
chosen = st.session_state.get("specs", DEFAULT_SPECS)  # Chunk & compare's choice, custom specs included
specs = st.multiselect("Chunkers", list(dict.fromkeys(DEFAULT_SPECS + chosen)), default=chosen)
ks_text = st.text_input("k values", "1,3,5,10")
c1, c2, c3 = st.columns(3)
qualify = c1.checkbox("Product-qualified questions", value=True)
join = c2.checkbox("Joined stream", value=bool(st.session_state.get("joined")))
n_answers = c3.number_input("Answer the first N questions (0: off)", 0, len(dataset.questions), 0,
                            help="The chat model answers from each chunker's top 3; token F1 and ROUGE-L against "
                                 "the reference answers. Slow with the local model; answers are cached.")
try:
    ks = parse_ks(ks_text)
except ValueError:
    st.error("k values are positive integers separated by commas, e.g. 1,3,5,10")
    st.stop()

if st.button("Run benchmark", type="primary", disabled=not specs):
    with progress_status("Benchmarking…") as (status, progress):
        try:
            st.session_state["bench_report"] = benchmark(
                services, dataset, specs, ks, qualify, join, progress, state.retrieval(), int(n_answers),
                max_specs=state.max_specs(), max_questions=state.server_config().bench_question_cap(state.mode()))
            status.update(label="Benchmark finished", state="complete")
        except ChunkLensError as exc:
            status.update(label=f"Benchmark failed: {md_escape(str(exc))}", state="error")

report: JsonObject | None = st.session_state.get("bench_report")  # only `benchmark` above sets it
if not report:
    st.stop()
view = BenchReport.of(report)
if capped := question_cap_line(report):
    st.info(md_escape(capped))
st.caption("Retrieval: " + ", ".join(f"{k} {v}" for k, v in (view.retrieval or {"mode": "dense"}).items()
                                     if k != "lexical"))
table = pd.DataFrame([{"chunker": spec, **r.flat_numbers()} for spec, r in view.results.items()])
for metric in ("hit", "mrr", "ndcg"):
    st.plotly_chart(charts.metric_vs_k(view, metric), width="stretch")
compared = compared_metrics(report)
shown = interval_rows(report, [m for m in compared if not lower_is_better(m)])
if shown:
    st.plotly_chart(charts.interval_chart(shown, "Headline metrics with their 95 % intervals (bootstrap over "
                                                f"{view.n_questions} questions)"), width="stretch",
                    key="bench-intervals")
    metric = st.selectbox("Paired comparison on", compared, help="Every pair of chunkers, question by question: "
                          "the mean difference and a paired sign-flip test, Holm-corrected over all pairs shown")
    matrix = pair_matrix(report, metric)
    if matrix is not None:
        st.plotly_chart(charts.pair_matrix(matrix), width="stretch", key="bench-pairs")
    gap = closest_gap(report, metric)
    if gap is not None:
        st.caption(md_escape(gap.sentence()))
k_max = max(view.ks)
st.plotly_chart(charts.bars(view, {f"span IoU@{k_max}": lambda r: r.at("span_iou", k_max),
                                   f"span recall@{k_max}": lambda r: r.at("span_recall", k_max)},
                            "Span metrics"), width="stretch")
chunkers, docs, collisions = top1_collisions(report)
if chunkers and docs:
    st.plotly_chart(charts.collision_heatmap(chunkers, docs, collisions), width="stretch", key="collision-heatmap")
st.plotly_chart(charts.bars(view, {f"wrong_doc@{k}": _wrong_doc_at(k) for k in view.ks},
                            "Collisions: share of the top k from a document without the answer"), width="stretch")
if any(r.answer_f1 is not None for r in view.results.values()):
    st.plotly_chart(charts.bars(view, {"token F1": lambda r: r.answer_f1 or 0.0,
                                       "ROUGE-L": lambda r: r.answer_rouge_l or 0.0},
                                "Generated answers against the reference answers"), width="stretch")
st.plotly_chart(charts.bars(view, {stage: _stage_seconds(stage) for stage in ("chunk", "embed", "index", "query")},
                            "Seconds per stage"),
                width="stretch")
st.dataframe(table, hide_index=True, width="stretch")
if any(r.judged_questions is not None for r in view.results.values()):
    st.caption("judged@k: for the questions judged by hand, the share of each chunker's top k that the judgments "
               "cover (pool depth). An unjudged hit counts as not answering: where judged@k is low, judge more hits "
               "of those questions on the Query page before trusting a difference.")
d1, d2, d3 = st.columns(3)
d1.download_button("Download CSV", table.to_csv(index=False), "chunklens-benchmark.csv", "text/csv")
d2.download_button("Download JSON", json.dumps(report, indent=2), "chunklens-benchmark.json", "application/json")
d3.download_button("Download report", lambda: render_html(view), "chunklens-benchmark.html", "text/html",
                   on_click="ignore", help="One HTML file with the settings, tables and figures; opens offline")
