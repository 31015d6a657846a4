"""What a method keeps beside a chunk (`Chunk.meta`) and in a chunker's trace is JSON that a run cache or an
edited export brings back: every reader narrows a value to the type it was written as, and reads anything else as
absent, instead of passing it on to code that expects the written type."""

from __future__ import annotations

import pytest

from core.methods.chop.cnm import ChopMeta, cnm_sources
from core.methods.chop.continuity import decisions_of
from core.methods.lgmgc.chunker import split_statistics
from core.schema.chunks import Chunk, Chunking, add_note


def _chunk(**meta) -> Chunk:
    return Chunk("d", 0, 4, "text", 1, index=1, meta=meta)


def test_chop_meta_reads_what_a_run_wrote():
    c = _chunk(cnm={"category": "Washer", "nouns": [], "model": "W1", "confidence": 1.0}, cnm_source="extracted",
               cnm_sources={"model": "title"}, continuity=False, continuity_reason="new manual")
    m = ChopMeta.of(c)
    assert (m.cnm and m.cnm.model, m.source, m.sources, m.continuity, m.reason) == (
        "W1", "extracted", {"model": "title"}, False, "new manual")
    assert decisions_of([c, _chunk()]) == [False, None]


def test_chop_meta_reads_a_value_of_another_type_as_absent():
    """A hand-edited export: a decision written as text, a source that is a number, a reason that is a list."""
    c = _chunk(continuity="yes", cnm_sources={"model": 3, "category": "title"}, cnm_source=7,
               continuity_reason=["x"])
    m = ChopMeta.of(c)
    assert (m.source, m.sources, m.continuity, m.reason) == (None, {"category": "title"}, None, "")
    assert cnm_sources(c) == {"category": "title"}
    assert cnm_sources(_chunk(cnm_sources="title")) == {}
    assert decisions_of([c]) == [None]


def test_split_statistics_leave_out_a_window_not_in_the_written_form():
    good = {"start": 0, "end": 40, "positions": [10, 20], "p": [0.5, 0.2], "split": 10, "cut": 10}
    traces = [{"kind": "eos", "windows": [good, {"positions": [30], "p": [], "split": 30}, "not a window",
                                          {"positions": "30", "p": [0.1], "split": 30}]}]
    assert split_statistics(traces) == pytest.approx({
        "windows": 1, "split_at_first_candidate": 1.0, "split_at_last_candidate": 0.0, "candidates_per_window": 2.0,
        "mean_p_first_candidate": 0.5, "mean_p_last_candidate": 0.2})
    assert split_statistics([{"kind": "eos", "windows": "none"}]) is None


def test_a_note_goes_into_the_trace_list():
    chunking = Chunking([], {"kind": "page"})
    add_note(chunking.trace, "kept whole")
    add_note(chunking.trace, "again")
    assert chunking.trace["notes"] == ["kept whole", "again"]
