"""Hand corrections of CHOP tags: runs stay piecewise constant, only changed chunks are embedded again, the
metrics move, and tags survive an export / import round trip."""

from __future__ import annotations

import pytest

from core.infra.errors import ChunkLensError
from core.ingest.datasets import load_dataset
from core.methods.chop.edits import CnmEdit, EditLog, apply_edits, export_tags, import_tags
from core.methods.chop.rules import RuleCnm
from core.services import build_services
from core.settings import Settings
from core.workbench import apply_cnm_edits, evaluate_result, make_corpus, run_chunkers, sample_folder


@pytest.fixture()
def chop_run(tmp_path):
    ds = load_dataset(sample_folder())
    ds.documents, ds.questions = ds.documents[:2], [q for q in ds.questions if q.references[0].doc_id in
                                                      {d.doc_id for d in ds.documents[:2]}]
    services = build_services(Settings(workspace=str(tmp_path / "ws")))
    corpus = make_corpus(ds.documents, ds, join=True)
    result = run_chunkers(services, corpus, ["chop:retrieval=filter"])["chop:retrieval=filter"]
    assert result.ok
    return services, corpus, result


def test_tag_edit_applies_to_the_whole_run_and_flip_starts_a_new_one(chop_run):
    _, _, result = chop_run
    chunks = result.run.chunks
    mid = len(chunks) // 2
    assert chunks[mid].meta["continuity"] is True
    new_tag = {"category": "fan", "nouns": ["fan blade"], "model": "ZZ9", "confidence": 1.0}
    edited, changed = apply_edits(chunks, [CnmEdit(chunks[mid].chunk_id, cnm=new_tag)], RuleCnm())
    run_start = chunks[mid].meta["cnm_from"]
    same_run = [c for c in edited if c.meta["cnm_from"] == run_start]
    assert all(c.meta["cnm"]["model"] == "ZZ9" and "Model: ZZ9" in c.prefix for c in same_run)
    assert changed == len(same_run) and chunks[mid].meta["cnm"]["model"] != "ZZ9"  # input untouched
    flipped, _ = apply_edits(chunks, [CnmEdit(chunks[mid].chunk_id, continuity=False)], RuleCnm())
    # the flip starts a run whose CNM the backend extracts from the chunk: a run made by a hand edit is "edited"
    (extracted,) = RuleCnm().extract([chunks[mid].text])
    assert flipped[mid].meta["cnm_source"] == "edited" and flipped[mid].meta["cnm"] == extracted.cnm.model_dump()
    assert flipped[mid].meta["continuity"] is False and flipped[mid].meta["continuity_reason"] == "set by hand"
    assert flipped[mid].meta["cnm_from"] == flipped[mid + 1].meta["cnm_from"] == flipped[mid].index
    assert flipped[mid + 1].meta["cnm_source"] == "inherited"
    assert flipped[mid - 1].meta["cnm"] == chunks[mid - 1].meta["cnm"]  # the run before it keeps its tag
    with pytest.raises(ChunkLensError, match="no decision to flip"):
        apply_edits(chunks, [CnmEdit(chunks[0].chunk_id, continuity=False)], RuleCnm())


def test_edits_reembed_only_what_changed_and_move_the_metrics(chop_run):
    services, corpus, result = chop_run
    before = evaluate_result(services, result, corpus.questions, [10], qualify=True)
    # give every run a model no question names: the filter then has nothing to match and falls back
    starts = [c for c in result.run.chunks if c.meta["continuity"] is not True]
    edits = [CnmEdit(c.chunk_id, cnm={"category": "fan", "nouns": [], "model": "ZZ9"}) for c in starts]
    computed_before = services.embedder.stats.computed
    edited, changed = apply_cnm_edits(services, corpus, result, edits)
    assert changed > 0 and services.embedder.stats.computed - computed_before == changed
    after = evaluate_result(services, edited, corpus.questions, [10], qualify=True)
    # the filter had helped (each question names its model); with no run left to match, the ranking gets worse
    assert after["mrr@10"] < before["mrr@10"] and after["hit@10"] <= before["hit@10"]


def test_export_import_round_trip(chop_run):
    _, _, result = chop_run
    chunks = result.run.chunks
    tags = export_tags(chunks)
    assert import_tags(chunks, tags) == []  # nothing differs
    tags[3]["cnm"] = {"category": "camera", "nouns": [], "model": "Q1", "confidence": 0.5}
    tags[5]["continuity"] = not tags[5]["continuity"]
    edits = import_tags(chunks, tags)
    assert [(e.chunk_id, e.cnm is not None, e.continuity is not None) for e in edits] == [
        (chunks[3].chunk_id, True, False), (chunks[5].chunk_id, False, True)]
    tags[0]["start"] += 1
    with pytest.raises(ChunkLensError, match="spans differ"):
        import_tags(chunks, tags)


def test_a_damaged_edit_log_is_kept_aside_reported_and_not_overwritten(tmp_path):
    key = "0123456789abcdef" * 2
    EditLog(tmp_path / "cnm_edits").append(key, "chop", [CnmEdit("d#1", continuity=False)])
    path = EditLog(tmp_path / "cnm_edits").path(key)
    bad = path.read_bytes()[:30]  # cut short, as by a full disk
    path.write_bytes(bad)

    log = EditLog(tmp_path / "cnm_edits")  # the next page run
    assert log.batches(key) == []
    [line] = log.problems
    [kept] = sorted(path.parent.glob(f"{path.name}.damaged-*"))
    assert "\n" not in line and line.startswith(f"{path}: damaged (not valid JSON")
    assert f"kept as {kept.name} in the same folder" in line
    assert kept.read_bytes() == bad and not path.exists()

    log.append(key, "chop", [CnmEdit("d#2", continuity=True)])  # the next edit starts a new log beside the copy
    log.append(key, "chop", [CnmEdit("d#3", continuity=False)])
    again = EditLog(tmp_path / "cnm_edits")
    assert [[e.chunk_id for e in b] for b in again.batches(key)] == [["d#2"], ["d#3"]] and again.problems == []
    assert kept.read_bytes() == bad and again.run_keys() == [key]


def test_the_inspectors_rows_read_back_as_exactly_the_edits_made_in_them():
    import copy

    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.ingest.documents import join_documents
    from core.methods.chop.edits import edits_from_rows, inspector_rows

    docs = load_dataset(sample_folder()).documents[:2]
    chunks = make_chunker("chop", ChunkerContext(llm=RuleCnm())).chunk(join_documents(docs)).chunks
    rows = inspector_rows(chunks, [None] * len(chunks))
    assert [r["chunk"] for r in rows] == [c.chunk_id for c in chunks] and rows[0]["continues"] is None
    assert edits_from_rows(chunks, rows, copy.deepcopy(rows)) == []
    after = copy.deepcopy(rows)
    after[2]["model"], after[2]["nouns"] = "X9", "filter,  remote ,"
    after[0]["continues"] = True  # the first chunk has no decision to flip
    after[3]["continues"] = not rows[3]["continues"]
    edits = edits_from_rows(chunks, rows, after)
    assert [(e.chunk_id, e.continuity) for e in edits] == [(chunks[2].chunk_id, None),
                                                           (chunks[3].chunk_id, not rows[3]["continues"])]
    assert edits[0].cnm == {"category": rows[2]["category"] or None, "model": "X9", "nouns": ["filter", "remote"],
                            "confidence": 1.0}


def test_tags_are_read_and_written_through_the_cnm_type():
    """A chunk no CHOP run tagged has no CNM; one tagged with nothing has an empty one; `put` writes the JSON form
    that `of` reads back."""
    from core.methods.chop.cnm import CNM
    from core.schema.chunks import Chunk

    chunk = Chunk("d", 0, 4, "text", 1)
    assert CNM.of(chunk) is None
    chunk.meta["cnm"] = None
    assert CNM.of(chunk) == CNM() and CNM.of(chunk).is_empty()
    CNM(category="air conditioner", nouns=["filter"], model=" 225B ").put(chunk)
    assert chunk.meta["cnm"] == {"category": "air conditioner", "nouns": ["filter"], "model": "225B", "confidence": 0.0}
    assert CNM.of(chunk).model == "225B" and not CNM.of(chunk).is_empty()


#: edits whose every field but one is sound: each must keep its whole file out of the replay
MALFORMED_EDITS = {
    "sources is text": {"chunk_id": "d#1", "cnm": {"model": "X9"}, "sources": "title"},
    "sources names no tag part": {"chunk_id": "d#1", "cnm": {"model": "X9"}, "sources": {"price": "title"}},
    "a source is no text": {"chunk_id": "d#1", "cnm": {"model": "X9"}, "sources": {"model": 5}},
    "cnm is text": {"chunk_id": "d#1", "cnm": "X9"},
    "nouns are a number": {"chunk_id": "d#1", "cnm": {"nouns": 5}},
    "continuity is text": {"chunk_id": "d#1", "continuity": "yes"},
    "continuity is a number": {"chunk_id": "d#1", "continuity": 0.0},
    "chunk id is a list": {"chunk_id": ["d#1"], "continuity": False},
    "an unknown field": {"chunk_id": "d#1", "continuity": False, "weight": 3},
    "an edit is a list": ["d#1", False],
}


@pytest.mark.parametrize("case", list(MALFORMED_EDITS))
def test_an_edit_log_with_one_malformed_field_is_kept_aside_with_one_line(tmp_path, case):
    """An edit file is read whole or not at all: a field of the wrong shape (an imported or hand-made file) is
    refused when read, with one line, instead of failing later in the inspector's replay on every visit."""
    import json

    key = "0123456789abcdef" * 2
    log = EditLog(tmp_path / "cnm_edits")
    log.append(key, "chop", [CnmEdit("d#0", continuity=True)])
    path = log.path(key)
    data = json.loads(path.read_text())
    data["batches"].append([MALFORMED_EDITS[case]])
    path.write_text(json.dumps(data))

    log = EditLog(tmp_path / "cnm_edits")
    assert log.batches(key) == []
    [line] = log.problems
    [kept] = sorted(path.parent.glob(f"{path.name}.damaged-*"))
    assert "\n" not in line and line.startswith(f"{path}: damaged (") and kept.name in line
    assert not path.exists() and json.loads(kept.read_text()) == data


def test_a_library_archive_with_malformed_edits_imports_the_rest_and_says_so(tmp_path):
    import json

    from core.infra.workspace import Workspace
    from core.ingest.library import Library
    from core.outputs.archive import import_archive
    from tests.support.archives import DOC, archive

    key = "0123456789abcdef" * 2
    edits = {"spec": "chop", "batches": [[{"chunk_id": "a#1", "cnm": {"model": "X9"}, "sources": "title"}]]}
    ws = Workspace.open(tmp_path / "ws")
    report = import_archive(archive({"libraries/abcdef12/order.json": json.dumps(["a"]).encode(),
                                     "libraries/abcdef12/texts/a.json": DOC,
                                     f"libraries/abcdef12/cnm_edits/{key}.json": json.dumps(edits).encode()}), ws)
    assert report.added == ["document a"]
    [line] = [s for s in report.skipped if s.startswith("CNM edits")]
    assert line.startswith(f"CNM edits for run {key[:8]}: not readable") and "sources" in line
    log = EditLog(Library(ws.uploads, "abcdef12").edits_dir)
    assert log.run_keys() == [] and log.batches(key) == [] and log.problems == []
