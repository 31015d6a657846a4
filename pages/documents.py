"""Documents: upload manuals or load the sample set; list, remove; separate documents or one joined stream."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import archive_panel, confirm, generate_panel, state
from components.html import md_escape
from core.infra.errors import ChunkLensError
from core.ingest.documents import SUPPORTED_SUFFIXES
from core.tokens import count_tokens
from core.workbench import sample_folder

state.through_app()
st.header("Documents")
lib = state.library()
limits = state.settings()

left, right = st.columns([2, 1])
with left:
    uploads = st.file_uploader("Upload manuals", type=[s.lstrip(".") for s in SUPPORTED_SUFFIXES],
                               accept_multiple_files=True, key="uploader", max_upload_size=limits.max_upload_mb,
                               help=f"Up to {limits.max_upload_mb} MB per file (Settings: upload limit).")
    if st.button("Add uploaded files", disabled=not uploads):
        result = lib.add([(f.name, f.getvalue()) for f in uploads or []], max_bytes=limits.max_upload_bytes)
        for message in result.errors:  # each names a file: the client chose that name, so it is escaped
            st.error(md_escape(message))
        for message in result.notes:
            st.warning(md_escape(message))
        if result.added:
            st.success(f"Added {len(result.added)} document(s): {', '.join(d.doc_id for d in result.added)}")
with right:
    if st.button("Load the sample set", type="primary",
                 help="Adds 7 manuals of similar products with 56 questions; your own documents stay"):
        try:
            st.success(lib.load_dataset(sample_folder()).message())  # the bundled set: our own text
        except ChunkLensError as exc:
            st.error(md_escape(str(exc)))
    mode = st.radio("Chunk them as", ["separate documents", "one joined stream"],
                    index=1 if st.session_state.get("joined") else 0,
                    help="Joined: the papers' setting, one continuous file whose document joins are unknown to "
                         "the chunkers (CHOP's continuity decisions are then scored against the true joins).")
    st.session_state["joined"] = mode == "one joined stream"
archive_panel.render()

docs = lib.documents()
if not docs:
    st.info("No documents yet: upload PDF, DOCX, TXT or Markdown files, or load the sample set.")
    st.stop()

rows = [{"doc_id": d.doc_id, "title": d.title, "characters": len(d.text), "tokens": count_tokens(d.text),
         "pages": len(d.page_starts) or None, "source": d.source.split("/")[-1]} for d in docs]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
dataset = lib.dataset()
if dataset is not None:
    st.caption(f"QA set '{md_escape(dataset.name)}': {len(dataset.questions)} questions with gold spans over these "
               "documents.")

generate_panel.render(lib)

to_remove = st.multiselect("Remove documents", [d.doc_id for d in docs])
if not to_remove:
    confirm.forget("remove_docs")
named = ", ".join(md_escape(d) for d in to_remove)
if confirm.confirmed("Remove selected", "remove_docs", f"Remove {len(to_remove)} document(s) ({named}) with their "
                     "original uploads? This cannot be undone.", "Yes, remove them", disabled=not to_remove):
    for doc_id in to_remove:
        lib.remove(doc_id)
    st.rerun()
st.caption(f"Library {lib.id}: open [/?lib={lib.id}](/?lib={lib.id}) (the home page with this library) to come back "
           "to these documents after a restart.")
