"""One correction fixes the family, in the app (AppTest, in-process): a family of real near-duplicate manuals (the
shared eurorack set, loaded as a QA set so its gold tags and questions are there), whose category the `extract`
backend leaves unknown; one manual's category and model typed in the CNM inspector; the proposal for the other
manuals; applying it moves the tag shares and the retrieval metrics (the logic: tests/unit/test_cnm_family.py)."""

from __future__ import annotations

import json

import pytest

from core.infra.workspace import Workspace
from core.ingest.library import Library
from core.methods.chop.edits import export_tags
from tests.support.appflow import click, load_sample, new_session, run_chunks
from tests.support.data import shared_dataset

CATEGORY = "Eurorack synthesizer module"


@pytest.mark.slow
def test_one_typed_correction_is_proposed_for_the_family_and_moves_the_metrics(app_workspace, monkeypatch):
    at = new_session(monkeypatch, app_workspace)
    lib_id = at.query_params["lib"]
    lib = Library(Workspace.open(app_workspace).uploads, lib_id[0] if isinstance(lib_id, list) else lib_id)
    lib.load_dataset(shared_dataset("eurorack_modules"))
    at = run_chunks(at)
    chunks = at.session_state["runs"]["results"]["chop"].run.chunks
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception
    assert "category 0% right, 0% wrong, 100% unknown" in tag_line(at)
    # an unknown part is shown as unknown, with its reason, in the table's "tag from" column
    [table] = [d.value for d in at.dataframe if "tag from" in d.value.columns]
    assert table["tag from"].str.contains("category: unknown: no title").all()
    assert (table["category"] == "").all()

    # one manual's category and model corrected (through the tag import: AppTest cannot type into the table)
    assert chunks[0].doc_id == "mi-shades"
    tags = export_tags(chunks)
    tags[0]["cnm"] = {**tags[0]["cnm"], "category": CATEGORY, "model": "Shades (original)"}
    at.file_uploader(key="import-chop").set_value(("tags.json", json.dumps(tags).encode(), "application/json"))
    at = click(at.run(), "Apply imported tags")
    assert not at.exception and not at.error
    at.run()
    [proposal] = [e for e in at.expander if e.label.startswith(r"Carry your correction of mi\-shades")]
    [changes] = [d.value for d in proposal.dataframe]
    others = {d.doc_id for d in lib.documents()} - {"mi-shades"}
    assert set(changes["manual"]) == others and len(others) == 14
    category = changes[changes["part"] == "category"]
    assert set(category["proposed"]) == {CATEGORY} and (category["now"] == "(unknown)").all()
    assert set(category["manual"]) == others

    at = click(at, "Apply to ")
    assert not at.exception and not at.error
    assert any("chunk(s) changed" in s.value for s in at.success)
    [metrics] = [d.value for d in at.dataframe if list(d.value.columns) == ["metric", "before", "after", "change"]]
    assert len(metrics) > 0  # the retrieval metrics before and after, over the set's 40 questions
    at.run()
    assert "category 100% right, 0% wrong, 0% unknown" in tag_line(at)
    [proposal] = [e for e in at.expander if e.label.startswith("Carry your correction")]
    assert any("changes no other manual" in i.value for i in proposal.info)  # carried: nothing left to propose


def tag_line(at) -> str:
    [line] = [m.value for m in at.markdown if m.value.startswith("**Tags against the gold tags**")]
    return line


@pytest.mark.slow
def test_a_category_that_sets_its_manual_apart_is_shown_as_not_carried(app_workspace, monkeypatch):
    """The sample set holds two fans among other products: a fan's corrected category "fan" is what sets it apart,
    so the proposal lists the manuals that rarely name it as not carried, with why."""
    at = run_chunks(load_sample(new_session(monkeypatch, app_workspace)))
    chunks = at.session_state["runs"]["results"]["chop"].run.chunks
    tags = export_tags(chunks)
    first_fan = next(i for i, c in enumerate(chunks) if c.doc_id == "fan-F30")
    tags[first_fan]["cnm"] = {**tags[first_fan]["cnm"], "category": "fan"}
    at.switch_page("pages/cnm_inspector.py").run()
    at.file_uploader(key="import-chop").set_value(("tags.json", json.dumps(tags).encode(), "application/json"))
    at = click(at.run(), "Apply imported tags")
    assert not at.exception and not at.error
    at.run()
    [proposal] = [e for e in at.expander if e.label.startswith(r"Carry your correction of fan\-F30")]
    assert any(c.value.startswith("Not carried to 5 manual(s)") for c in proposal.caption)
    [held] = [d.value for d in proposal.dataframe if "why" in d.value.columns and "category" in d.value.columns]
    assert set(held["manual"]) == {"aircon-225B", "aircon-226R", "camera-X100", "camera-X200", "dehumidifier-D50"}
    assert held["why"].str.startswith('not carried: "fan" sets fan-F30 apart').all()
