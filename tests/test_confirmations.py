"""Discarding saved tag edits asks first, and Cancel keeps them (the real app, through AppTest)."""

from __future__ import annotations

from tests.test_app import click
from tests.test_app_state import MANUAL, edit_a_tag, edited_models, new_session, run_chunks, upload


def test_discard_edits_asks_first_and_cancel_keeps_them(tmp_path, monkeypatch):
    at = edit_a_tag(run_chunks(upload(new_session(monkeypatch, tmp_path / "ws"), [("breeze.md", MANUAL)])))
    assert "ZZ9" in edited_models(at)
    at = click(at, "Discard edits")
    assert "Discard every saved tag edit" in at.warning[0].value and "ZZ9" in edited_models(at)
    at = click(at, "Cancel")
    assert "ZZ9" in edited_models(at)
    at = click(click(at, "Discard edits"), "Yes, discard the edits")
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception and not at.session_state["edited"]
    assert "ZZ9" not in [c.meta["cnm"]["model"] for c in at.session_state["runs"]["results"]["chop"].run.chunks]
