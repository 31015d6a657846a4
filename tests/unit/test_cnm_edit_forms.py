"""Hand edits of CHOP tags as stored and shown: an edit file and a tag export keep their JSON form (same keys, same
order, same digest), the inspector's rows read a chunk's tags by type, and an edit that would need a CNM backend
is refused in one line when there is none."""

from __future__ import annotations

import json

import pytest

from core.infra.errors import ChunkLensError
from core.methods.chop.edits import CnmEdit, _plain, apply_edits, edits_digest, export_tags, inspector_rows
from core.schema.chunks import Chunk

TAG = {"category": "Washer", "nouns": ["drum"], "model": "W1", "confidence": 1.0}


def _run() -> list[Chunk]:
    first = Chunk("d", 0, 5, "alpha", 1, index=0, meta={"cnm": TAG, "cnm_source": "extracted", "continuity": None})
    second = Chunk("d", 6, 10, "beta", 1, index=1, meta={"cnm": TAG, "cnm_source": "inherited", "continuity": True,
                                                         "continuity_reason": "same manual"})
    return [first, second]


def test_an_edit_is_stored_as_before():
    assert json.dumps(_plain(CnmEdit("d#1", TAG, False))) == (
        '{"chunk_id": "d#1", "cnm": {"category": "Washer", "nouns": ["drum"], "model": "W1", "confidence": 1.0}, '
        '"continuity": false}')
    assert list(_plain(CnmEdit("d#1", None, True, {"model": "title"}))) == ["chunk_id", "cnm", "continuity", "sources"]
    assert edits_digest([CnmEdit("d#1", TAG, False)]) == edits_digest([CnmEdit("d#1", dict(TAG), False)])


def test_a_tag_export_keeps_its_form():
    assert export_tags(_run())[1] == {"chunk_id": "d#1", "doc_id": "d", "start": 6, "end": 10, "cnm": TAG,
                                      "continuity": True}


def test_inspector_rows_read_the_tags_by_type():
    chunks = _run()
    chunks[1].meta.update(continuity="yes", cnm_source=3)  # a hand-edited export
    rows = inspector_rows(chunks, [None, {"model": "W1"}])
    assert (rows[0]["continues"], rows[0]["source"], rows[0]["reason"]) == (None, "extracted", "")
    assert (rows[1]["continues"], rows[1]["source"], rows[1]["gold model"]) == (None, None, "W1")


def test_a_flip_that_needs_a_new_tag_without_a_backend_is_one_clear_error():
    with pytest.raises(ChunkLensError, match="no CNM backend"):
        apply_edits(_run(), [CnmEdit("d#1", continuity=False)], backend=None)
    taught, _ = apply_edits(_run(), [CnmEdit("d#1", {**TAG, "model": "W2"}, False)], backend=None)
    assert [c.meta["cnm"]["model"] for c in taught] == ["W1", "W2"]  # a flip that brings its tag needs none
