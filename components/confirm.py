"""Buttons that ask before they destroy: Remove, Discard edits, Replace set.

The first click only shows the question with a confirming button and Cancel; the action runs on the run where
the confirming button is clicked. The question names what will be lost, so nobody loses work to a stray click.
"""

from __future__ import annotations

import streamlit as st


def confirmed(label: str, key: str, question: str, yes: str, disabled: bool = False) -> bool:
    """True on the run where the user confirmed `question` (asked after clicking `label`); False otherwise."""
    asking = f"confirm:{key}"
    if st.session_state.get(asking):
        st.warning(question)
        left, right = st.columns(2)
        if left.button(yes, key=f"{key}:yes", type="primary"):
            st.session_state.pop(asking, None)
            return True
        if right.button("Cancel", key=f"{key}:cancel"):
            st.session_state.pop(asking, None)
            st.rerun()
        return False
    if st.button(label, key=key, disabled=disabled):
        st.session_state[asking] = True
        st.rerun()
    return False


def forget(key: str) -> None:
    """Drop a question still open (its subject changed, say)."""
    st.session_state.pop(f"confirm:{key}", None)
