"""ChunkLens app entry point: shared sidebar, navigation, and the home page.

The pages stay thin: every chunking, embedding and retrieval step is a call into `core`.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st  # noqa: E402  (the environment above must be set before models load)

import core.catalog  # noqa: E402, F401  (the composition root: every chunker, method and service)
from components import cache_guard, demo, sidebar, state, upload_cap  # noqa: E402


def home() -> None:
    from core.chunkers.registry import available

    st.title("ChunkLens")
    st.write(
        "See, and prove, how chunking changes what a RAG system retrieves: every chunker side by side on the same "
        "text, CHOP's CNM prefixes and continuity decisions, then the same questions against each of them."
    )
    st.markdown(
        "1. **Documents**: upload manuals or load the sample set (seven near-duplicate product manuals).\n"
        "2. **Chunk & compare**: run the chunkers and see their boundaries, prefixes and decisions.\n"
        "3. **Query**: ask one question of every chunker at once.\n"
        "4. **Benchmark**: Hit, MRR, NDCG and span metrics over a QA set with gold spans.\n"
        "5. **CNM inspector**: correct CHOP's tags by hand and watch the metrics move."
    )
    st.caption("Chunkers: " + ", ".join(available()))
    docs = state.library().documents()
    st.caption(f"This library holds {len(docs)} document(s). Offline defaults: all-MiniLM-L6-v2 (bundled, on "
               "onnxruntime), embedded ChromaDB, tiktoken cl100k_base, CNM tags extracted from the library itself (no "
               "model), hybrid retrieval (MiniLM + BM25).")
    demo.render()


st.set_page_config(page_title="ChunkLens", layout="wide")
state.hide_error_details()  # before anything can fail: a shared server's visitors see no tracebacks or paths
state.start_run_limits()  # this run's client, paid requests and file readers (a shared server's limits)
state.library()  # give this browser session its library id before any page runs
if state.mode() == "shared":  # the browser's per-file limits bind no visitor: the server holds a visitor's total
    operator = state.server_config()
    upload_cap.install(operator.max_session_upload_mb * 2**20,
                       upload_cap.file_limit_mb(operator.max_upload_mb, operator.max_session_upload_mb),
                       operator.trusted_proxies)
    cache_guard.keep_shared_caches()  # no visitor clears every session's models and stores
sidebar.render()
state.show_problems()  # damaged settings or library files: what happened, and where each was kept
pages = [
    st.Page(home, title="Home", default=True),
    st.Page("pages/documents.py", title="Documents", url_path="documents"),
    st.Page("pages/chunks.py", title="Chunk & compare", url_path="chunks"),
    st.Page("pages/query.py", title="Query", url_path="query"),
    st.Page("pages/benchmark.py", title="Benchmark", url_path="benchmark"),
    st.Page("pages/cnm_inspector.py", title="CNM inspector", url_path="cnm"),
]
st.navigation(pages).run()
