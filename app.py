"""ChunkLens app entry point: navigation and the home page.

The pages stay thin: every chunking, embedding and retrieval step is a call into `core`.
"""

from __future__ import annotations

import os

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def home() -> None:
    from core.chunkers.base import available

    st.title("ChunkLens")
    st.write(
        "See, and prove, how chunking changes what a RAG system retrieves: every chunker side by side on the same "
        "text, then the same questions against each of them."
    )
    st.subheader("Chunkers")
    st.write(", ".join(f"`{name}`" for name in available()))
    st.caption("Offline defaults: all-MiniLM-L6-v2 (bundled), embedded ChromaDB, tiktoken cl100k_base.")


st.set_page_config(page_title="ChunkLens", layout="wide")
st.navigation([st.Page(home, title="Home", default=True)]).run()
