"""`python -m bench.query` on a tiny size, and the per-run query state it measures: the optimised `ask_all` answers
exactly as a fresh retriever per question did, and nothing cached outlives what it was built from (an edited or
re-indexed run, a collection rebuilt by another client)."""

from __future__ import annotations

import json

import pytest

from bench import query as bq
from core.chunkers.registry import make_chunker
from core.methods.chop.edits import CnmEdit
from core.pipeline import chunk_documents, index_run
from core.schema.documents import Document
from core.services import build_services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.workbench import Corpus, ask_all, retriever_for, run_chunkers
from tests.support.data import shared_dataset

TINY = ["--chunks", "300", "--chunkers", "2", "--questions", "5", "--repeat", "2"]


@pytest.fixture(scope="module")
def data_folders():
    return [shared_dataset("covid_qa"), shared_dataset("chroma_eval")]


@pytest.mark.slow
def test_tiny_run_reports_every_figure(tmp_path, capsys, data_folders):
    out = tmp_path / "query.json"
    report = bq.main([*TINY, "--cache", str(tmp_path / "cache"), "--json", str(out),
                      "--data", *map(str, data_folders)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["input"]["chunks_per_collection"] == 300 and report["input"]["chunkers"] == ["naive-500t",
                                                                                               "recursive"]
    assert report["vectors_computed"] == 300  # a fresh cache embeds every chunk
    for key in ("new_question", "asked_again"):
        figures = report[key]
        assert figures["questions"] == 5
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["max_ms"]
        assert set(figures["split_p50_ms"]) == {"query_embedding", "store_query", "rest"}
        assert all(v >= 0 for v in figures["split_p50_ms"].values())
        assert set(figures["per_chunker_p50_ms"]) == {"naive-500t", "recursive"}
    assert report["first_question_ms"] > 0 and report["peak_rss_mb"] >= report["query_peak_rss_mb"] > 0
    assert report["target"]["p50_ms"] == 50.0 and isinstance(report["target"]["met"], bool)
    assert len(report["sample_hits"]) == 5 and all(len(ids) == 5 for h in report["sample_hits"] for ids in h.values())
    assert "new question" in printed and "peak RSS" in printed

    again = bq.main([*TINY, "--cache", str(tmp_path / "cache"), "--data", *map(str, data_folders)])
    assert again["vectors_computed"] == 0  # the chunk vectors came from the cache
    assert again["sample_hits"] == report["sample_hits"]


@pytest.mark.slow
def test_optimised_ask_all_equals_a_fresh_retriever_per_question(tmp_path, data_folders):
    setup = bq.build_setup(tmp_path / "ws", tmp_path / "cache", 300, 2, 5, data=data_folders)
    for q in setup.questions:
        answers = ask_all(setup.services, setup.results, q.text(), 5, q)
        for spec, result in setup.results.items():
            old = retriever_for(setup.services, result).search(q.text(), 5)  # what ask_all did for every question
            new = answers[spec].hits
            assert [h.chunk.chunk_id for h in new] == [h.chunk.chunk_id for h in old]
            assert [h.score for h in new] == pytest.approx([h.score for h in old], abs=1e-6)
            assert answers[spec].score is not None and answers[spec].score.n_relevant >= 1
    states = {spec: r.query_state for spec, r in setup.results.items()}
    ask_all(setup.services, setup.results, "one more question", 5)
    assert all(r.query_state is states[spec] for spec, r in setup.results.items())  # built once per run


DOCS = [Document("tv", "Television", "Press INPUT to pick the HDMI port. The remote needs two AAA batteries.\n\n"
                 "Error 12 means no signal: check the cable and the selected input."),
        Document("ac", "Air conditioner", "Clean the air filter every two weeks.\n\n"
                 "Error E4 means the indoor temperature sensor failed; call service.")]


@pytest.mark.slow
def test_edited_tags_and_new_services_get_a_new_retriever(tmp_path):
    from core.workbench import apply_cnm_edits

    services = build_services(Settings(workspace=str(tmp_path / "ws")))
    corpus = Corpus(DOCS)
    results = run_chunkers(services, corpus, ["chop:retrieval=filter"])
    result = results["chop:retrieval=filter"]
    first = ask_all(services, results, "what does error 12 mean on the Television", 2)
    state = result.query_state
    assert state is not None

    target = result.run.chunks[0]
    edited, _ = apply_cnm_edits(services, corpus, result, [CnmEdit(target.chunk_id, cnm={"model": "QN90A"})])
    after = ask_all(services, {"chop:retrieval=filter": edited}, "What does error 12 mean on the QN90A?", 2)
    assert edited.query_state is not None and edited.query_state is not state
    assert "QN90A" in edited.query_state.retriever.policy.chunk_values  # the edited tags, not the old ones
    assert after["chop:retrieval=filter"].query_tags.applied == "filter"
    assert [h.chunk.doc_id for h in after["chop:retrieval=filter"].hits] == ["tv"]  # only the run tagged QN90A

    again = build_services(Settings(workspace=str(tmp_path / "ws")))  # e.g. settings changed and back
    ask_all(again, results, "what does error 12 mean on the Television", 2)
    assert result.query_state is not state and result.query_state.retriever.store is again.store
    assert [h.chunk.chunk_id for h in first["chop:retrieval=filter"].hits] == [
        h.chunk.chunk_id for h in ask_all(again, results, "what does error 12 mean on the Television", 2)[
            "chop:retrieval=filter"].hits]


def test_query_survives_a_collection_rebuilt_by_another_client(tmp_path, cached_minilm):
    """The store keeps its collection handles; one made stale by another client is fetched again."""
    mine, theirs = (VectorStore(StoreSettings(path=tmp_path / "db")) for _ in range(2))
    run = chunk_documents(DOCS, make_chunker("sentence:max_tokens=20"))
    indexed = index_run(run, DOCS, cached_minilm, mine)
    vector = cached_minilm.embed(["what does error E4 mean"])
    before = mine.query(indexed.collection, vector, 4)
    assert len(run.chunks) >= 4 and len(before[0]) == 4

    only_ac = [c for c in run.chunks if c.doc_id == "ac"]
    theirs.build(indexed.collection, only_ac, cached_minilm.embed([c.embed_text for c in only_ac]), {"who": "them"})
    after = mine.query(indexed.collection, vector, 4)
    assert [cid for cid, _ in after[0]] == [cid for cid, _ in before[0] if cid.startswith("ac#")]

    theirs.delete(indexed.collection)
    with pytest.raises(Exception, match="searching"):
        mine.query(indexed.collection, vector, 4)


def test_store_forgets_its_handle_when_it_rebuilds(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    run = chunk_documents(DOCS, make_chunker("sentence:max_tokens=20"))
    indexed = index_run(run, DOCS, cached_minilm, store)
    vector = cached_minilm.embed(["error E4"])
    assert len(store.query(indexed.collection, vector, 10)[0]) == len(run.chunks)
    store.build(indexed.collection, run.chunks[:1], cached_minilm.embed([run.chunks[0].embed_text]), {})
    assert len(store.query(indexed.collection, vector, 10)[0]) == 1  # the count was fetched anew


def test_a_question_is_embedded_on_one_thread_with_the_same_vector(minilm):
    """Small inputs go to the one-thread worker; the vector is the batch path's, and no other thread changes."""
    import torch

    from core.store import embeddings

    threads = torch.get_num_threads()
    texts = [f"How do I reset the remote control, step {i}?" for i in range(embeddings.SMALL_INPUT + 4)]
    batch = minilm.embed(texts)  # more than SMALL_INPUT: the calling thread, all torch threads
    alone = minilm.embed(texts[:1])
    assert alone.shape == (1, batch.shape[1])
    assert float(alone[0] @ batch[0]) == pytest.approx(1.0, abs=1e-5)
    assert embeddings.small_input_pool().submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == threads
