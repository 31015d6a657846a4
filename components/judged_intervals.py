"""Query's "all judged questions" panel: every question the user judged, against every chunker on show, with 95 %
intervals and the closest gap, so a user judging by hand sees when they have judged enough to tell two chunkers
apart (core.workbench.judged_benchmark does the work)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from components.html import md_escape
from components.progress import progress_status
from core.evaluation.metric_at import MetricAt, figure_text
from core.evaluation.results import BenchReport
from core.evaluation.verdicts import ahead_of, closest_gap
from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject
from core.ingest.datasets import QADataset
from core.services import Services
from core.store.retrieval import RetrievalSettings
from core.workbench import ChunkerResult, judged_benchmark


def render(services: Services, judged: QADataset, results: Mapping[str, ChunkerResult], k: int, join: bool,
           retrieval: RetrievalSettings) -> None:
    qids = [q.qid for q in judged.questions]
    with st.expander(f"All {len(qids)} judged questions: each chunker's metrics with their 95 % intervals"):
        st.caption("Your judged questions against every chunker on show, scored as Benchmark scores them. With a "
                   "handful of questions the intervals are wide: the sentence below says how many judged "
                   "questions would settle the closest gap.")
        if st.button("Score every judged question", key="judged-intervals"):
            with progress_status("Scoring the judged questions…") as (status, progress):
                try:
                    st.session_state["judged_report"] = judged_benchmark(services, judged, results, k, join,
                                                                         retrieval)
                    status.update(label="Scored", state="complete", expanded=False)
                except ChunkLensError as exc:
                    status.update(label=f"Scoring stopped: {md_escape(str(exc))}", state="error")
        report: JsonObject | None = st.session_state.get("judged_report")
        if not report:
            return
        view = BenchReport.of(report)
        if view.qids != qids or set(view.results) - set(results):
            st.info("You judged more since this was scored, or ran other chunkers: score again to include them.")
        hit_k = MetricAt("hit", k)
        shown = dict.fromkeys([MetricAt("hit", 1), hit_k, MetricAt("mrr", k)])  # hit@1 once where k is 1
        ahead = ahead_of(report, hit_k)
        rows = [{"chunker": spec, **{at.key: figure_text(r, at) for at in shown},
                 f"reliably ahead on {hit_k} of": ", ".join(ahead.get(spec, [])) or "-"}
                for spec, r in view.results.items()]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        gap = closest_gap(report, hit_k)
        if gap is not None:
            st.markdown(md_escape(gap.sentence("judged questions")))
