"""A saved edit log the CNM inspector cannot replay never breaks the page: a damaged one (a field of the wrong shape,
as an imported or hand-made file may hold) is kept aside with one line; one that no longer fits the run is said
and can be discarded. The real app, through AppTest."""

from __future__ import annotations

import json

from core.infra.workspace import Workspace
from core.ingest.library import Library
from core.methods.chop.edits import EditLog
from tests.support.appflow import click, edit_a_tag, new_session, run_chunks, upload
from tests.support.corpora import MANUAL


def _saved_log(at, ws) -> tuple[EditLog, str]:
    log = EditLog(Library(Workspace.open(ws).uploads, at.query_params["lib"]).edits_dir)
    [key] = log.run_keys()
    return log, key


def _revisit(at):
    """The inspector as the next visit draws it: nothing edited in this session, the log read from disk."""
    at.session_state["edited"] = {}
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception, at.exception
    return at


def _edit_then_change_the_log(tmp_path, monkeypatch, change):
    ws = tmp_path / "ws"
    at = edit_a_tag(run_chunks(upload(new_session(monkeypatch, ws), [("breeze.md", MANUAL)])))
    log, key = _saved_log(at, ws)
    data = json.loads(log.path(key).read_text())
    change(data["batches"][0][0])
    log.path(key).write_text(json.dumps(data))
    return _revisit(at), log, key, data


def test_a_damaged_edit_log_is_kept_aside_and_the_inspector_draws(tmp_path, monkeypatch):
    at, log, key, data = _edit_then_change_the_log(tmp_path, monkeypatch, lambda e: e.update(sources="title"))
    [line] = [w.value for w in at.warning if "damaged" in w.value]
    assert "sources" in line and "kept as" in line
    [kept] = log.path(key).parent.glob(f"{key}.json.damaged-*")
    assert json.loads(kept.read_text()) == data and not log.path(key).exists()
    assert at.dataframe, "the inspector's table was not drawn"
    assert "ZZ9" not in [c.meta["cnm"]["model"] for c in at.session_state["runs"]["results"]["chop"].run.chunks]
    at = edit_a_tag(at)  # editing goes on: a new log beside the kept copy
    assert [[e.cnm["model"] for e in b] for b in EditLog(log.folder).batches(key)] == [["ZZ9"]]


def test_saved_edits_that_no_longer_fit_can_be_discarded(tmp_path, monkeypatch):
    at, log, key, _ = _edit_then_change_the_log(tmp_path, monkeypatch, lambda e: e.update(chunk_id="gone#9"))
    assert any("no longer fit this run" in w.value for w in at.warning)
    at = click(click(at, "Discard edits"), "Yes, discard the edits")
    assert not at.exception and not log.path(key).exists()
    at = _revisit(at)
    assert not any("no longer fit" in w.value for w in at.warning)
