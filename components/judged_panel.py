"""The library's own question set on the Benchmark page: the questions judged on Query, with delete, export as a
qa-spans zip and import of one."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import confirm
from components.html import md_escape
from core.infra.errors import ChunkLensError
from core.infra.uploads import limit_mb, read_upload
from core.ingest.judged import export_zip
from core.ingest.library import Library
from core.schema.documents import documents_by_id

_MAX_ZIP_BYTES = 50 * 2**20


def render(lib: Library) -> None:
    try:
        judged = lib.judged.questions()
    except ChunkLensError:
        judged = []  # a damaged file: Library.dataset kept it aside and the page shows its line
    with st.expander(f"This library's judged questions ({len(judged)})", expanded=False):
        st.caption("Questions you judged on the Query page. A question with evidence scores every chunker here; "
                   "export them as a qa-spans v1 folder (zip) to use elsewhere, or import one.")
        if judged:
            docs = documents_by_id(lib.documents())
            rows = [{"qid": q.qid, "question": q.question, "evidence spans": len(q.relevant),
                     "judged not answering": len(q.not_relevant),
                     "status": ("scores chunkers" if q.usable else "no evidence yet") if q.fits(docs)
                     else "left out: its documents changed"} for q in judged]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            try:
                st.download_button("Download the judged questions (zip)", export_zip(judged, lib.documents()),
                                   f"chunklens-judged-{lib.id}.zip", "application/zip")
            except ChunkLensError as exc:
                st.caption(md_escape(str(exc)))
            qid = st.selectbox("Delete a question", [q.qid for q in judged],
                               format_func=lambda i: f"{i}: {next(q.question for q in judged if q.qid == i)}")
            if confirm.confirmed("Delete it", "delete_judged", f"Delete {md_escape(qid)} and all its judgments?",
                                 "Yes, delete it"):
                lib.judged.delete(qid)
                st.rerun()
        upload = st.file_uploader("Import judged questions (zip)", type=["zip"], key="judged-import",
                                  max_upload_size=limit_mb(_MAX_ZIP_BYTES))
        if st.button("Import", disabled=upload is None) and upload is not None:  # a disabled button is never clicked
            try:
                data = read_upload(upload, upload.name, _MAX_ZIP_BYTES, "judged question sets")
                st.success(md_escape(lib.import_judged(data, _MAX_ZIP_BYTES * 4)))
            except ChunkLensError as exc:  # the file's name first: the line may be about one of its members
                st.error(md_escape(f"{upload.name}: {exc}"))
