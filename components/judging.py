"""The controls that judge a hit on the Query page: two buttons under each hit, and the sentence picker that narrows
an answering hit to its evidence. What a judgment means and where it is kept is `core` (core.evaluation.judging,
core.ingest.judged); this module only draws and reports clicks."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components.html import esc, md_escape
from core.evaluation.judging import Verdict, evidence_choices
from core.schema.chunks import Chunk
from core.schema.spans import Span

_PICKING = "judge_picking"  # {"spec", "rank"} of the hit whose evidence is being picked
_VERDICT_STYLE = {"answers": ("#15803d", "judged: answers"), "does not answer": ("#b91c1c", "judged: does not answer"),
                  "not judged": ("#6b7280", "not judged yet")}


@dataclass
class Judgment:
    """A judgment made on this run: which hit, and its evidence (None: it does not answer)."""

    spec: str
    rank: int
    evidence: list[Span] | None


def verdict_html(verdict: Verdict) -> str:
    colour, label = _VERDICT_STYLE[verdict]
    return f'<span style="color:{colour};font-size:0.75rem">{esc(label)}</span>'


def hit_buttons(spec: str, rank: int, verdict: Verdict) -> Judgment | None:
    """"Answers it" (opens the evidence picker under the hit) and "Does not"; a Judgment when "Does not" was
    clicked."""
    yes, no = st.columns(2)
    if yes.button("✓ answers it", key=f"judge-yes-{spec}-{rank}", type="primary" if verdict == "answers" else
                  "secondary", help="Then tick the sentences that hold the answer"):
        st.session_state[_PICKING] = {"spec": spec, "rank": rank}
        st.rerun()  # the picker opens under this hit
    if no.button("✗ does not", key=f"judge-no-{spec}-{rank}",
                 help="This hit does not answer the question"):
        st.session_state.pop(_PICKING, None)
        return Judgment(spec, rank, None)
    return None


def picking() -> tuple[str, int] | None:
    got = st.session_state.get(_PICKING)
    return (got["spec"], got["rank"]) if got else None


def evidence_picker(spec: str, rank: int, chunk: Chunk) -> Judgment | None:
    """The hit's sentences as checkboxes; a Judgment once saved (no sentence ticked: the whole hit is the
    evidence)."""
    choices = evidence_choices(chunk)
    with st.form(key=f"evidence-{spec}-{rank}", border=True):
        st.markdown("**Which sentences hold the answer?** Tick one or more; with none ticked, the whole hit is the "
                    "evidence.")
        ticked = [span for i, (span, text) in enumerate(choices)
                  if st.checkbox(md_escape(" ".join(text.split())[:300]) or "(blank)",
                                 key=f"evidence-{spec}-{rank}-{i}")]
        save, cancel = st.columns(2)
        saved = save.form_submit_button("Save evidence", type="primary")
        cancelled = cancel.form_submit_button("Cancel")
    if cancelled:
        st.session_state.pop(_PICKING, None)
        st.rerun()
    if saved:
        st.session_state.pop(_PICKING, None)
        return Judgment(spec, rank, ticked or [chunk.span])
    return None
