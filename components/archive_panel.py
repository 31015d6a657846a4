"""The Documents page's export / import panel: one zip for this library, or a zip merged into it. The archive
logic (what goes in, what is refused, what is merged) is `core.outputs.archive`; this only draws it."""

from __future__ import annotations

import streamlit as st

from components import state
from components.html import md_escape
from core.infra.errors import ChunkLensError
from core.infra.uploads import limit_mb, read_upload
from core.outputs.archive import MAX_ARCHIVE_BYTES, export_archive, import_archive


def render() -> None:
    lib, ws = state.library(), state.workspace()
    with st.expander("Export or import this library"):
        st.caption("One zip with this library's documents, chunk runs, hand-edited CNM tags and your settings. "
                   "It never holds an API key or a server's password (nor, on a shared server, the server's "
                   "addresses and models). Importing adds what is new to this library and keeps everything "
                   "already here; it never changes the settings or other libraries' chunk runs.")
        if st.button("Prepare export"):
            own = state.mode() == "local"  # on a shared server the operator's addresses and paths stay behind
            st.session_state["library_export"] = (lib.id, export_archive(ws, state.settings(), [lib.id],
                                                                         operator_fields=own))
        ready = st.session_state.get("library_export")
        if ready and ready[0] == lib.id:
            st.download_button(f"Download chunklens-{lib.id}.zip ({len(ready[1]) / 1024:.0f} KB)", ready[1],
                               f"chunklens-{lib.id}.zip", "application/zip")
        uploaded = st.file_uploader("Import a ChunkLens zip", type=["zip"], key="archive_upload",
                                    max_upload_size=limit_mb(MAX_ARCHIVE_BYTES))
        if uploaded is not None and st.button("Import into this library"):
            try:
                data = read_upload(uploaded, uploaded.name, MAX_ARCHIVE_BYTES, "ChunkLens archives")
                report = import_archive(data, ws, into=lib.id, max_file_bytes=state.settings().max_upload_bytes,
                                        max_library_text_bytes=lib.max_text_bytes)
            except ChunkLensError as exc:
                st.error(f"Not imported: {md_escape(str(exc))}")  # it may quote a member's name
                return
            added = md_escape(", ".join(report.added[:20]))  # a QA set's name is the archive's to choose
            st.success(f"Imported {len(report.added)} item(s)" + (f": {added}" if added else "; nothing was new"))
            if report.skipped:  # these lines may quote member names from the archive: plain text, not Markdown
                st.info("Kept as they were or left out:")
                st.text("\n".join(report.skipped[:50]))
