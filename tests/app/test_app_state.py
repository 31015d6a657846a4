"""What a user builds in the app survives a restart and travels in an export, and sessions stay apart.

Real app through Streamlit's AppTest: uploads, chunk runs, a hand edit of CHOP's tags (through the inspector's
tag import) and saved settings; then a "restart" (a new AppTest on the same workspace with Streamlit's resource
cache cleared, so models and stores are built again) and an export imported into a fresh workspace."""

from __future__ import annotations

import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.support.appflow import click, edit_a_tag, edited_models, new_session, run_chunks, upload
from tests.support.corpora import MANUAL


def top_k_input(at: AppTest):
    """The sidebar's Top k field (AppTest shows the sidebar's form on the home page only)."""
    at.switch_page("app.py").run()
    [top_k] = [n for n in at.number_input if n.label == "Top k"]
    return top_k


def save_top_k(at: AppTest, k: int) -> AppTest:
    top_k_input(at).set_value(k)
    return click(at, "Save settings")


def test_uploads_runs_edits_and_settings_survive_a_restart_and_an_export(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    first = upload(new_session(monkeypatch, ws), [("breeze.md", MANUAL), ("kettle.txt", b"Descale monthly.")])
    lib = first.query_params["lib"]
    first = run_chunks(save_top_k(first, 9))  # settings first: a change of settings starts the runs afresh
    first = edit_a_tag(first)
    before = edited_models(first)
    assert "ZZ9" in before

    st.cache_resource.clear()  # a restart: nothing of the first process's memory is used again
    again = new_session(monkeypatch, ws, lib)
    again.switch_page("pages/documents.py").run()
    assert list(again.dataframe[0].value["doc_id"]) == ["breeze", "kettle"]
    assert top_k_input(again).value == 9
    again = run_chunks(again)
    assert again.dataframe[0].value["cached"].all()  # the chunk runs and collections were found on disk
    assert edited_models(again) == before  # the hand edit was saved with the library and applied again
    assert any("saved edit(s) applied" in c.value for c in again.caption)

    again.switch_page("pages/documents.py").run()
    again = click(again, "Prepare export")
    lib_id, data = again.session_state["library_export"]
    assert lib_id == lib and [d.proto.label for d in again.get("download_button")] == [
        f"Download chunklens-{lib}.zip ({len(data) / 1024:.0f} KB)"]

    st.cache_resource.clear()
    fresh = new_session(monkeypatch, tmp_path / "fresh")
    fresh.switch_page("pages/documents.py").run()
    fresh.file_uploader(key="archive_upload").set_value(("lib.zip", data, "application/zip")).run()
    fresh = click(fresh, "Import into this library")
    assert not fresh.error and "document breeze" in fresh.success[0].value
    assert list(fresh.dataframe[0].value["doc_id"]) == ["breeze", "kettle"]
    assert fresh.query_params["lib"] != lib  # merged into the new session's own library
    fresh = run_chunks(fresh)  # the runs are recomputed: an import never writes the shared run cache
    assert not fresh.session_state["runs"]["results"]["chop"].run.from_cache
    assert edited_models(fresh) == before  # the hand edit travelled with the library and fits the recomputed run
    # the archive's settings are not saved: the fresh server keeps its own
    assert top_k_input(fresh).value != 9 and not (tmp_path / "fresh" / "settings.json").exists()

    # importing the same zip again adds nothing and says what it kept
    fresh.switch_page("pages/documents.py").run()
    fresh.file_uploader(key="archive_upload").set_value(("lib.zip", data, "application/zip")).run()
    fresh = click(fresh, "Import into this library")
    assert "nothing was new" in fresh.success[0].value and "document breeze: already here" in fresh.text[0].value


def test_a_hostile_archive_is_refused_in_the_app(tmp_path, monkeypatch):
    from tests.support.archives import HOSTILE

    at = new_session(monkeypatch, tmp_path / "ws")
    at.switch_page("pages/documents.py").run()
    data, _ = HOSTILE["dotdot"]
    at.file_uploader(key="archive_upload").set_value(("evil.zip", data, "application/zip")).run()
    at = click(at, "Import into this library")
    assert at.error and at.error[0].value.startswith("Not imported: member ")
    assert "path part" in at.error[0].value and not (tmp_path / "evil.json").exists()


def test_two_sessions_never_share_runs_edits_or_keys(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    a = upload(new_session(monkeypatch, ws), [("breeze.md", MANUAL)])
    b = upload(new_session(monkeypatch, ws), [("breeze.md", MANUAL)])  # the same file, its own library
    assert a.query_params["lib"] != b.query_params["lib"]
    a = edit_a_tag(run_chunks(a))
    a.session_state["api_key"] = "sk-test-only-in-session-a"
    a.run()
    b = run_chunks(b)
    assert "ZZ9" in edited_models(a)
    b.switch_page("pages/cnm_inspector.py").run()
    assert "edited" not in b.session_state  # no saved edits of its own library to replay
    models = [c.meta["cnm"]["model"] for c in b.session_state["runs"]["results"]["chop"].run.chunks]
    assert "ZZ9" not in models and not any("saved edit" in c.value for c in b.caption)
    assert "api_key" not in b.session_state
    assert a.session_state["runs"]["results"] is not b.session_state["runs"]["results"]
