"""CNM inspector: every CHOP chunk's tag and decision in an editable table; fix by hand, re-embed what
changed, and see the metric change; export and import tags. Edits are kept in the library (an `EditLog`), so
they are there again after a restart."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components import confirm, state
from components.html import md_escape
from core.infra.errors import ChunkLensError
from core.infra.uploads import limit_mb, read_upload
from core.methods.chop.edits import CnmEdit, EditLog, edits_from_rows, export_tags, inspector_rows
from core.methods.chop.family import hand_examples, held_back, propose
from core.pipeline import run_key
from core.services import Services
from core.workbench import (
    MAX_TAGS_BYTES,
    apply_cnm_edits,
    edits_key,
    evaluate_result,
    gold_tags,
    replay_cnm_edits,
    tag_accuracy,
    tag_file_edits,
)

state.through_app()
st.header("CNM inspector")
corpus = state.corpus()
found = state.services()
results = {s: r for s, r in state.runs(corpus).items() if r.ok and r.spec.startswith("chop")}
if not results or found is None:
    st.info("Run a chop chunker on the Chunk & compare page first.")
    st.stop()
services: Services = found  # the functions below see a global's declared type, not its narrowing

spec = st.selectbox("CHOP run", list(results))
log = EditLog(state.library().edits_dir)
key = edits_key(log, corpus.documents, results[spec].run.identity)  # finds edits saved under the text-only key
edited = st.session_state.get("edited", {}).get(key)
unfit = False  # saved edits that no longer fit the run: said, and offered to Discard below
if edited is None and (saved := log.batches(key)):
    try:
        edited = replay_cnm_edits(services, corpus, results[spec], saved)
        st.session_state.setdefault("edited", {})[key] = edited
        st.caption(f"{sum(len(b) for b in saved)} saved edit(s) applied.")
    except ChunkLensError as exc:
        unfit = True
        st.warning(f"Saved edits no longer fit this run and were not applied: {md_escape(str(exc))}")
for line in log.problems:  # a damaged edit log, kept aside: said now, and on every page until dismissed
    st.warning(md_escape(line))
    if line not in state.problems():
        state.problems().append(line)
current = edited or results[spec]
chunks = current.run.chunks

accuracy = tag_accuracy(corpus, current)
if accuracy is not None:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    def shares(part: str) -> str:
        got = getattr(accuracy, part)
        return "-" if got is None else f"{pct(got.right)} right, {pct(got.wrong)} wrong, {pct(got.unknown)} unknown"

    st.markdown(f"**Tags against the gold tags** ({accuracy.chunks} chunks): category {shares('category')}"
                f" · model {shares('model')} · empty {pct(accuracy.empty_rate)}")
golds = gold_tags(corpus, chunks)
rows = inspector_rows(chunks, golds)
frame = pd.DataFrame(rows)
st.caption("Edit category, nouns or model (the whole run of continuing chunks takes the tag), or tick / untick "
           "'continues' to flip a decision. Then apply.")
changed_frame = st.data_editor(
    # keyed by the run as edited so far: after an apply the table starts afresh from the new tags, with no typed
    # edit left over in the widget to be sent again (and no rerun that could swallow the next click)
    frame, hide_index=True, width="stretch", key=f"editor-{spec}-{run_key(corpus.documents, current.run.identity)}",
    disabled=["chunk", "start", "source", "tag from", "gold model", "reason", "text"],
    column_config={"continues": st.column_config.CheckboxColumn("continues", help="TRUE: same document"),
                   "tag from": st.column_config.TextColumn("tag from", help="where each part of the tag came from: "
                                                           "a title, a heading, the first page, a description, a "
                                                           "keyphrase, a correction; with that evidence's "
                                                           "confidence (the share of the parts it gave that were "
                                                           "right, on every set with gold tags); or why a part "
                                                           "is unknown"),
                   "reason": st.column_config.TextColumn("reason", help="the signal behind the decision: a new "
                                                         "title, a tag change, unrelated text")},
)


def show_effect(new_result, changed: int, applied: list[CnmEdit]) -> None:
    log.append(key, spec, applied)
    st.session_state.setdefault("edited", {})[key] = new_result
    st.success(f"{changed} chunk(s) changed and were embedded again; the rest came from the cache.")
    if corpus.questions:
        ks = [1, 5, 10]
        before = evaluate_result(services, results[spec], corpus.questions, ks, True, state.retrieval())
        after = evaluate_result(services, new_result, corpus.questions, ks, True, state.retrieval())
        metrics = [m for m in before if not m.endswith(("_std@1", "_std@5", "_std@10"))]
        st.dataframe(pd.DataFrame([{"metric": m, "before": round(before[m], 3), "after": round(after[m], 3),
                                    "change": round(after[m] - before[m], 3)} for m in metrics]),
                     hide_index=True, width="stretch")


edits = edits_from_rows(chunks, rows, changed_frame.to_dict("records"))
if st.button(f"Apply {len(edits)} edit(s)", type="primary", disabled=not edits):
    try:
        new_result, changed = apply_cnm_edits(services, corpus, current, edits)
        show_effect(new_result, changed, edits)
    except ChunkLensError as exc:
        st.error(md_escape(str(exc)))  # it may quote a chunk id from an imported edit

c1, c2 = st.columns(2)
c1.download_button("Export tags (JSON)", json.dumps(export_tags(chunks), indent=1), f"{spec}-tags.json",
                   "application/json")
uploaded = c2.file_uploader("Import tags", type=["json"], key=f"import-{spec}",
                            max_upload_size=limit_mb(MAX_TAGS_BYTES))
if uploaded is not None and c2.button("Apply imported tags"):
    try:
        data = read_upload(uploaded, uploaded.name, MAX_TAGS_BYTES, "tag files")
        imported = tag_file_edits(chunks, uploaded.name, data)
        new_result, changed = apply_cnm_edits(services, corpus, current, imported)
        show_effect(new_result, changed, imported)
    except ChunkLensError as exc:
        st.error(f"Tags not imported: {md_escape(str(exc))}")  # it quotes the file's name and content
def family_panel(latest) -> None:
    """The proposal that carries the hand corrections in `latest` (this run as edited so far) to the other manuals,
    shown before anything changes, with a button that applies it."""
    chunks = latest.run.chunks
    examples = hand_examples(chunks, corpus.documents)
    if not examples:
        return
    family_edits, changes = propose(chunks, corpus.documents, examples)
    named = ", ".join(sorted(examples))
    with st.expander(f"Carry your correction of {md_escape(named)} to the other manuals", expanded=True):
        st.caption("Near-duplicate manuals share their product type and differ by model: the category you typed "
                   "goes to every manual whose title states no other type (unless it sets your manual apart), and "
                   "the model is read from each title where your correction sat in yours. Nothing changes until "
                   "you apply it.")
        held = held_back(corpus.documents, examples)
        if held:
            st.caption(f"Not carried to {len(held)} manual(s): your category sets your manual apart and they rarely "
                       "name it; they keep their tag.")
            st.dataframe(pd.DataFrame([{"manual": h.doc_id, "category": h.category, "why": h.why} for h in held]),
                         hide_index=True, width="stretch")
        if not changes:
            st.info("Your correction changes no other manual's tag.")
            return
        st.dataframe(pd.DataFrame([{"manual": c.doc_id, "part": c.part, "now": c.before or "(unknown)",
                                    "proposed": c.after, "why": c.why} for c in changes]),
                     hide_index=True, width="stretch")
        if st.button(f"Apply to {len(family_edits)} run(s)", key=f"family-{spec}"):
            try:
                new_result, changed = apply_cnm_edits(services, corpus, latest, family_edits)
                show_effect(new_result, changed, family_edits)
            except ChunkLensError as exc:
                st.error(md_escape(str(exc)))


family_panel(st.session_state.get("edited", {}).get(key) or current)
if (edited or unfit) and confirm.confirmed("Discard edits", f"discard:{key}", "Discard every saved tag edit of this "
                                           "run? The chunks go back to the tags the backend gave; this cannot be "
                                           "undone.", "Yes, discard the edits"):
    st.session_state.setdefault("edited", {}).pop(key, None)
    log.clear(key)
    st.rerun()
