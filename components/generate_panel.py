"""Generated questions on the Documents page: the configured chat model writes questions about the library's
documents, the program checks every one's evidence (core.evaluation.questions), and the set becomes the library's
QA set. Progress, Cancel (every answer received stays cached) and how far such sets have ranked chunkers like
hand-made ones."""

from __future__ import annotations

import streamlit as st

from components import state
from components.html import md_escape
from core.evaluation.questions import DESIGNS
from core.infra.errors import ChunkLensError
from core.ingest.library import Library
from core.workbench import generate_library_set, generated_set_trust

_RUNNING = "generating_questions"


def render(lib: Library) -> None:
    with st.expander("Generate questions with the chat model"):
        st.caption("The chat model (sidebar: CNM backend; the bundled SmolLM2 unless you name an OpenAI-compatible "
                   "server) writes questions about sentences whose facts differ between your manuals; each is kept "
                   "only if its evidence is found exactly once, it does not copy the evidence and it repeats no "
                   "other. The set becomes this library's QA set (Query, Benchmark); your judged questions stay.")
        for line in generated_set_trust():
            st.caption("Measured: " + md_escape(line))
        left, right = st.columns(2)
        n = left.number_input("Questions", 1, 500, 20)
        design = right.selectbox("Design", DESIGNS, help="pick: the program picks the evidence, the model writes "
                                 "the question (for small models); quote: the model also quotes its evidence")
        if st.session_state.pop(_RUNNING, False):  # the last run was cut short by Cancel or a page change
            st.warning("Generating was cancelled. Every answer received is cached: generating again asks only for "
                       "the rest.")
        if not st.button("Generate questions", disabled=not lib.documents()):
            return
        services = state.services()
        if services is None:
            return
        with st.status("Generating questions…", expanded=True) as status:
            st.button("Cancel", help="Stops after the request in progress; the answers received are cached")
            bar = st.progress(0.0)

            def progress(done: int, total: int) -> None:
                bar.progress(done / max(total, 1), text=f"{done}/{total} requests at most")

            st.session_state[_RUNNING] = True
            try:
                generated, corpus, questions = generate_library_set(services, lib.documents(), int(n), design,
                                                                    progress)
                loaded = lib.load_uploaded_dataset(f"generated-{design}", corpus, questions, replace=True)
            except ChunkLensError as exc:
                st.session_state.pop(_RUNNING, None)
                status.update(label=f"No questions: {md_escape(str(exc))}", state="error")
                return
            st.session_state.pop(_RUNNING, None)  # not on Cancel: the rerun it starts leaves the flag for the warning
            status.update(label=f"Kept {len(generated.questions)} of {generated.attempts} answers", state="complete")
        st.success(md_escape(f"Kept {len(generated.questions)} questions from {generated.model} "
                             f"({generated.calls} model calls, {generated.cached} answers from the cache); rejected: "
                             f"{generated.rejections()}. {loaded.message()}"))
