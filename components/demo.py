"""The guided demo on Home: one button runs the whole story (core.workbench.guided_demo), then its summary."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import charts, state
from components.html import md_escape
from components.live_results import live_status
from core.evaluation.collisions import top1_collisions
from core.evaluation.report import retrieval_phrase
from core.evaluation.verdicts import interval_rows
from core.infra.errors import ChunkLensError
from core.outputs.report_html import render_html
from core.workbench import DEFAULT_SPECS, guided_demo
from core.workbench.demo import HIT_1, HIT_10, demo_specs, framework_defaults
from core.workbench.live import RunSoFar, sample_stream


def render() -> None:
    st.subheader("Guided demo")
    st.write("The seven sample manuals of near-duplicate products joined into one stream, the default chunkers, "
             "and the 56 questions with the product named: which chunker finds the right manual, where the wrong "
             "hits come from, and where CHOP decided a new manual begins. Your own documents are not touched.")
    offered = framework_defaults()
    frameworks = st.multiselect(
        "Beside CHOP, your framework's default", offered, default=[], key="demo-frameworks",
        help="The splitter your stack ships, at its library's defaults, run on the same stream and questions: "
             "is it good enough on these manuals?") if offered else []
    if st.button("Run the guided demo", type="primary"):
        services = state.services()
        if services is None:
            return
        try:
            so_far = RunSoFar(services, demo_specs(frameworks), sample_stream())
        except ChunkLensError as exc:
            st.error(f"The demo stopped: {md_escape(str(exc))}")
            return
        # each chunker's row as it is chunked and indexed; the questions are scored once they all are
        with live_status("Running the demo…", so_far, compact=True, after="scoring the questions") as (
                status, live):
            try:
                st.session_state["demo"] = guided_demo(services, state.retrieval(), live.progress, frameworks,
                                                       on_result=live.add)
            except ChunkLensError as exc:
                live.clear()
                status.update(label=f"The demo stopped: {md_escape(str(exc))}", state="error")
                return
            live.clear()
            status.update(label=f"Demo ready in {st.session_state['demo'].seconds:.1f} s", state="complete",
                          expanded=False)
    summary = st.session_state.get("demo")
    if summary is None:
        st.caption(f"Runs {len(DEFAULT_SPECS) + len(frameworks)} chunkers; the first run takes about a minute, "
                   "later ones come from the caches.")
        return
    st.markdown(f"**Summary** · {summary.report['n_questions']} product-named questions, retrieval "
                f"{retrieval_phrase(summary.view)}, "
                f"{summary.seconds:.1f} s")
    table = pd.DataFrame(summary.table()).astype({"boundary F1": "float"})  # no decisions: an empty cell
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.2f")
                                for c in table.select_dtypes("number").columns})
    rows = interval_rows(summary.report, [HIT_1, HIT_10])
    if rows:
        st.plotly_chart(charts.interval_chart(rows, "hit@1 and hit@10 with their 95 % intervals"), width="stretch",
                        key="demo-intervals")
    gap = summary.gap()
    if gap is not None:
        n = max(1, summary.view.n_questions or 0)
        st.caption(md_escape(f"{n} questions: one question moves hit@k by {1 / n:.3f}. Bars are 95 % bootstrap "
                             "intervals over the questions; 'reliably ahead' is a paired sign-flip test, "
                             "Holm-corrected over every pair shown. " + gap.sentence()))
    chunkers, docs, matrix = top1_collisions(summary.report)
    if chunkers:
        st.plotly_chart(charts.collision_heatmap(chunkers, docs, matrix), width="stretch", key="demo-heatmap")
    strip = summary.continuity()
    if strip:
        judged, scores = strip
        st.markdown(f"**CHOP's continuity decisions** along the stream: boundary precision {scores.precision:.2f}, "
                    f"recall {scores.recall:.2f}, F1 {scores.f1:.2f} against the {scores.true} true joins")
        st.plotly_chart(charts.continuity_strip(judged, "Continuity decisions against the true joins"),
                        width="stretch", key="demo-strip")
    report = summary.report
    st.download_button("Download report", lambda: render_html(report), "chunklens-demo.html", "text/html",
                       on_click="ignore", help="One HTML file with the settings, tables and figures; opens offline")
