"""The `extract` CNM backend in the app (AppTest, in-process): offered in the sidebar, and the inspector says where
each of CHOP's tags came from and how far that evidence is trusted (the backend itself:
tests/unit/test_cnm_extract.py)."""

from __future__ import annotations

from tests.support.appflow import click, new_session, run_chunks


def test_the_app_offers_the_extractor_and_chop_carries_its_sources(app_workspace, monkeypatch):
    at = new_session(monkeypatch, app_workspace)
    [backend] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
    backend.select("extract")
    at = click(at, "Save settings")
    at.switch_page("pages/documents.py").run()
    at = run_chunks(click(at, "Load the sample set"))
    chunks = at.session_state["runs"]["results"]["chop"].run.chunks
    assert all(c.meta["cnm_sources"] for c in chunks) and chunks[0].meta["cnm"]["model"]
    # the inspector says where each tag came from, and why each FALSE decision fired
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception
    [frame] = [f.value for f in at.dataframe if "tag from" in f.value.columns]
    # with the confidence of each kind of evidence, as measured on the sets with gold tags
    from core.methods.chop.evidence import CONFIDENCE

    assert frame["tag from"].str.contains(f"model: title ({CONFIDENCE['title']:.2f})", regex=False).all()
    assert frame["tag from"].str.contains("nouns: keyphrase").all()
