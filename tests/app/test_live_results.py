"""Results as they come: Chunk & compare and the guided demo show each chunker's row (and, on Chunk & compare, its
boundaries) and an overall progress bar as soon as that chunker is done, while a later one still runs. The page is
stopped inside a later chunker's indexing (as Stop does), so the tree AppTest returns is the page at that moment."""

from __future__ import annotations

import json

import pytest
import streamlit as st

from core.evaluation.results import RunSummary
from tests.support.appflow import click, new_session, upload

TEXT = "\n\n".join(
    f"Section {i}. The Nordwind {200 + i}B air conditioner needs its filter cleaned every {i + 1} weeks. "
    "Rinse the filter in lukewarm water and let it dry in the shade before you put it back. Error E4 means the "
    "indoor temperature sensor failed: switch the unit off and call service." for i in range(40))
FULL_COLUMNS = list(RunSummary("x", 1, 0, 1.0, 0.0, 0.0, False, 0).row())


@pytest.fixture()
def stop_at_second_index(monkeypatch):
    """Stop the page (Streamlit's `st.stop`, what Stop or a rerun does) when the second chunker starts indexing;
    `indexed` lists the chunk runs indexed so far, `armed[0] = False` lets a run go through."""
    import core.workbench.runs as runs

    indexed: list[str] = []
    armed = [True]
    real = runs.index_run

    def index_run(run, *args, **kwargs):
        indexed.append(run.spec.split(":")[0])
        if armed[0] and len(indexed) == 2:
            st.stop()
        return real(run, *args, **kwargs)

    monkeypatch.setattr(runs, "index_run", index_run)
    return indexed, armed


def bars(at) -> list[tuple[int, str]]:
    """Each progress bar's percent and text (its Markdown escapes taken out, as the browser shows it)."""
    return [(p.proto.value, p.proto.text.replace("\\", "")) for p in at.get("progress")]


def test_chunk_and_compare_shows_a_finished_chunker_while_a_later_one_runs(tmp_path, monkeypatch,
                                                                            stop_at_second_index):
    indexed, armed = stop_at_second_index
    at = new_session(monkeypatch, tmp_path / "ws")
    at.session_state["specs"] = ["no-such-chunker", "paragraph", "recursive"]
    at = upload(at, [("manual.txt", TEXT.encode())])
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")

    assert indexed == ["paragraph", "recursive"]  # stopped inside recursive's indexing
    assert not at.exception
    [error] = at.error  # the failed chunker's error, shown when it failed
    assert error.value.startswith("no\\-such\\-chunker: ")
    [table] = at.dataframe  # paragraph's row, as the full table shows it
    assert list(table.value.columns) == FULL_COLUMNS
    assert list(table.value["chunker"]) == ["paragraph"] and table.value["chunks"].iloc[0] > 1
    [timeline, sizes] = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert {y for trace in timeline["data"] for y in trace["y"]} == {"paragraph"}  # its boundaries on the document
    assert {trace["name"] for trace in sizes["data"]} == {"paragraph"}
    assert bars(at) == [(66, "2/3 chunkers done, 1 failed · running recursive")]  # the overall bar
    assert "runs" not in at.session_state  # nothing stored: the run did not end

    armed[0] = False  # the same run to its end: the live view gives way to the page's full view
    at = click(at, "Run chunkers")
    assert not at.exception
    assert not bars(at)
    assert list(at.dataframe[0].value["chunker"]) == ["paragraph", "recursive"]
    assert [e.value.startswith("no\\-such\\-chunker: ") for e in at.error] == [True]



def test_the_guided_demo_shows_a_finished_chunkers_row_while_a_later_one_runs(tmp_path, monkeypatch,
                                                                              stop_at_second_index):
    from core.workbench import DEFAULT_SPECS
    from core.workbench.live import short_columns

    indexed, _ = stop_at_second_index
    at = click(new_session(monkeypatch, tmp_path / "ws"), "Run the guided demo")

    assert indexed == DEFAULT_SPECS[:2]  # stopped inside the second chunker's indexing
    assert not at.exception and not at.error
    [table] = at.dataframe  # the first chunker's row: chunks, size and time, before any question is scored
    assert list(table.value.columns) == list(short_columns())
    assert list(table.value["chunker"]) == DEFAULT_SPECS[:1] and table.value["chunks"].iloc[0] > 1
    n = len(DEFAULT_SPECS)
    assert bars(at) == [(100 // n, f"1/{n} chunkers done · running {DEFAULT_SPECS[1]}")]
    assert "demo" not in at.session_state


def _live_component_script():
    import streamlit as st

    from components.live_results import live_status
    from core.workbench import ChunkerResult
    from core.workbench.live import RunSoFar

    with live_status("Running…", RunSoFar(None, ["a", "b"]), compact=True, after="scoring the questions") as (
            _, live):
        live.progress("Waiting for the sample vectors (3/10 chunkers)", 3, 10)  # a step before the chunkers
        if st.session_state.get("chunkers"):
            live.progress("a", 0, 2)
            live.add("a", ChunkerResult("a", error="no server"))
            live.add("b", ChunkerResult("b", error="no server either"))
            live.progress("done", 2, 2)


def test_a_step_before_the_chunkers_shows_as_it_comes_and_what_follows_them_is_named():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_live_component_script).run()
    assert not at.exception
    assert bars(at) == [(30, "Waiting for the sample vectors (3/10 chunkers)")]
    at.session_state["chunkers"] = True
    at = at.run()
    assert not at.exception
    assert bars(at) == [(100, "2/2 chunkers done, 2 failed · scoring the questions")]
    assert [e.value for e in at.error] == ["a: no server", "b: no server either"]
