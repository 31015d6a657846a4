"""Retrieval modes on real Chroma and the real MiniLM: dense unchanged, BM25 and hybrid as defined, CNM filter and
boost composing with every mode, explained hits, the same answers from a `chroma run` server."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.methods.chop.policy import CnmPolicy
from core.methods.chop.rules import RuleCnm
from core.pipeline import chunk_documents, index_run
from core.schema.documents import Document
from core.store.fusion import fuse_rrf, fuse_weighted, minmax
from core.store.index import StoreSettings, VectorStore
from core.store.lexical import LexicalStore
from core.store.retrieval import RetrievalSettings, Retriever
from tests.support.chroma_server import chroma_server

FILLER = ("The unit has an indoor part and an outdoor part. Keep the air inlet and the outlet free. "
          "Use the remote control to set the mode, the fan speed and the timer. ")
DOCS = [
    Document("ac225", "Nordwind 225B manual", "Nordwind 225B air conditioner.\n\n" + FILLER * 6
             + "\n\nError E4 on the 225B means the indoor temperature sensor failed.\n\n"
             + "Clean the 225B air filter every two weeks."),
    Document("ac226", "Nordwind 226R manual", "Nordwind 226R air conditioner.\n\n" + FILLER * 6
             + "\n\nError E4 on the 226R means the outdoor fan motor is blocked.\n\n"
             + "Clean the 226R air filter every four weeks."),
    Document("cam", "Lumix X100 camera", "Charge the X100 camera battery for three hours before first use. "
             "Press the shutter halfway to focus, then fully to take the picture."),
]
QUESTIONS = ["226R: what does error E4 mean?", "how often do I clean the air filter of the 225B",
             "how long do I charge the camera battery", "what does the remote control set"]


def _setup(store: VectorStore, tmp_path, embedder, spec: str = "sentence:max_tokens=40"):
    chunker = make_chunker(spec, ChunkerContext(llm=RuleCnm(), embedder=embedder))
    run = chunk_documents(DOCS, chunker)
    indexed = index_run(run, DOCS, embedder, store, lexical=LexicalStore(tmp_path / "lexical"))
    return chunker, run, indexed


def _ids(hits) -> list[tuple[str, float]]:
    return [(h.chunk.chunk_id, round(h.score, 5)) for h in hits]


def test_dense_is_plain_chroma_top_k_and_explaining_changes_nothing(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm)
    plain = Retriever(store, indexed.collection, run.chunks, cached_minilm)
    explained = Retriever(store, indexed.collection, run.chunks, cached_minilm, lexical=indexed.lexical,
                          explain=True)
    vectors = cached_minilm.embed(QUESTIONS)
    raw = store.query(indexed.collection, vectors, 3)
    for q, want, got, why in zip(QUESTIONS, raw, plain.search_many(QUESTIONS, 3), explained.search_many(QUESTIONS, 3)):
        assert [(cid, round(s, 5)) for cid, s in want] == _ids(got) == _ids(why), q
        for h in why:
            assert h.dense_rank == h.rank and h.dense_score == pytest.approx(h.score)
            assert h.lexical_score is not None  # BM25's view of the same hit, even in dense mode


def test_bm25_and_hybrid_rank_as_defined(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm)
    lexical = indexed.lexical
    assert lexical is not None and lexical.ids == [c.chunk_id for c in run.index_units()]
    q = QUESTIONS[0]
    bm25 = Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=RetrievalSettings("bm25"),
                     lexical=lexical, explain=True).search(q, 3)
    assert [(h.chunk.chunk_id, h.score) for h in bm25] == lexical.search(q, 3)
    assert bm25[0].chunk.doc_id == "ac226" and "226R" in bm25[0].chunk.text  # the model number decides
    assert all(h.lexical_rank == h.rank and h.dense_score is not None for h in bm25)
    vector = cached_minilm.embed([q])
    dense_pool = store.query(indexed.collection, vector, 100)[0]
    lexical_pool = lexical.search(q, 100)
    for fusion, fuse in (("rrf", lambda: fuse_rrf(dense_pool, lexical_pool, 0.4, 60)),
                         ("weighted", lambda: fuse_weighted(dense_pool, lexical_pool, 0.4))):
        settings = RetrievalSettings("hybrid", fusion, 0.4)
        hits = Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=settings,
                         lexical=lexical).search(q, 4)
        want = fuse()[:4]
        assert [(h.chunk.chunk_id, h.score) for h in hits] == [(c.cid, c.score) for c in want]
        assert [(h.dense_rank, h.lexical_rank) for h in hits] == [(c.dense_rank, c.lexical_rank) for c in want]


def test_a_lexical_mode_without_its_index_is_refused(tmp_path, cached_minilm):
    from core.infra.errors import ConfigError

    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm)
    with pytest.raises(ConfigError, match="needs the run's lexical index"):
        Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=RetrievalSettings("bm25"))


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_cnm_filter_and_boost_compose_with_every_mode(tmp_path, cached_minilm, mode):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    chop, run, indexed = _setup(store, tmp_path, cached_minilm, "chop:size=60:overlap=10")
    models = {(c.meta.get("cnm") or {}).get("model") for c in run.chunks}
    assert {"225B", "226R"} <= models
    settings = RetrievalSettings(mode)
    filtered = Retriever(store, indexed.collection, run.chunks, cached_minilm, CnmPolicy("filter", RuleCnm()),
                         settings, indexed.lexical, explain=True)
    answer = filtered.ask("226R: what does error E4 mean?", 5)
    assert answer.hits and all(h.chunk.meta["cnm"]["model"] == "226R" for h in answer.hits)
    assert answer.tags.applied == "filter"
    assert all(h.dense_score is not None for h in answer.hits)
    unfiltered = filtered.ask("what does error E4 mean?", 5)  # no model named: searched unfiltered
    assert unfiltered.tags.applied.startswith("none") and {h.chunk.doc_id for h in unfiltered.hits} > {"ac226"}
    boosted = Retriever(store, indexed.collection, run.chunks, cached_minilm, CnmPolicy("boost", RuleCnm(), 0.5),
                        settings, indexed.lexical).search("225B: what does error E4 mean?", 3)
    assert boosted[0].chunk.meta["cnm"]["model"] == "225B" and boosted[0].tag_match == 1.0
    assert [h.score for h in boosted] == sorted((h.score for h in boosted), reverse=True)


def test_multi_granular_children_are_fused_then_grouped(tmp_path, cached_minilm):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm, "mg:theta=40")
    assert run.children() and indexed.lexical is not None
    hits = Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=RetrievalSettings("hybrid"),
                     lexical=indexed.lexical, explain=True).search(QUESTIONS[0], 3)
    assert all(h.chunk.parent_id is None and h.children for h in hits)
    assert len({h.chunk.chunk_id for h in hits}) == len(hits)
    assert all(h.unit_id in {c.chunk_id for c, _ in h.children} and h.lexical_score is not None for h in hits)


@pytest.mark.parametrize("mode", ["dense", "bm25"])
def test_a_boost_adds_to_cosines_as_they_are_and_to_bm25_scores_normalised(tmp_path, cached_minilm, mode):
    """The boost formula, recomputed by hand from the store and the BM25 index: cosine + boost * match in dense
    mode, min-max(BM25 over the pool) + boost * match otherwise; ties keep the pool's order."""
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm, "chop:size=60:overlap=10")
    policy = CnmPolicy("boost", RuleCnm(), 0.5)
    question, k = "225B: how often do I clean the air filter?", 4
    by_id = {c.chunk_id: c for c in run.chunks}
    tags = policy.tag_queries([question])[0]
    if mode == "dense":
        pool = store.query(indexed.collection, cached_minilm.embed([question]), max(k, policy.pool))[0]
        base = [s for _, s in pool]
    else:
        pool = indexed.lexical.search(question, max(100, 10 * k, policy.pool))
        base = minmax([s for _, s in pool])
    scored = sorted(((b + 0.5 * policy.match(tags, by_id[cid]), cid) for b, (cid, _) in zip(base, pool)),
                    key=lambda t: -t[0])[:k]
    answer = Retriever(store, indexed.collection, run.chunks, cached_minilm, policy, RetrievalSettings(mode),
                       indexed.lexical).ask(question, k)
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in answer.hits] == [(cid, round(s, 6)) for s, cid in scored]
    assert answer.tags.applied == "boost" and answer.hits[0].chunk.meta["cnm"]["model"] == "225B"


class _DocBoost:
    """A boost policy that favours one document's chunks: enough to see a boost reach a multi-granular run."""

    mode, boost, pool, store_field, label = "boost", 1.0, 50, "doc", "document boost"

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id

    def tag_queries(self, queries, values=()):
        return [{"doc": self.doc_id} for _ in queries]

    def chunk_value(self, chunk):
        return ""

    def filter_values(self, tags, values):
        return [], "none"

    def residual_query(self, query, tags):
        return query

    def match(self, tags, chunk):
        return 1.0 if chunk.doc_id == tags["doc"] else 0.0


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_boost_reaches_the_parents_of_a_multi_granular_run(tmp_path, cached_minilm, mode):
    """A boost used to be skipped for a run whose children are indexed; it now re-scores the merged parents."""
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    _, run, indexed = _setup(store, tmp_path, cached_minilm, "mg:theta=40")
    question = "how long do I charge the camera battery"
    plain = Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=RetrievalSettings(mode),
                      lexical=indexed.lexical).search(question, 3)
    assert plain[0].chunk.doc_id == "cam"
    answer = Retriever(store, indexed.collection, run.chunks, cached_minilm, _DocBoost("ac225"),
                       RetrievalSettings(mode), indexed.lexical).ask(question, 3)
    assert answer.tags.applied == "boost" and len(answer.hits) == 3
    assert all(h.chunk.doc_id == "ac225" and h.chunk.parent_id is None and h.children and h.tag_match == 1.0
               for h in answer.hits)
    assert [h.rank for h in answer.hits] == [1, 2, 3]
    assert [h.score for h in answer.hits] == sorted((h.score for h in answer.hits), reverse=True)


@pytest.mark.slow
def test_a_chroma_server_gives_the_same_hybrid_answers_and_no_search_of_its_own(tmp_path, cached_minilm):
    """The lexical index lives beside Chroma on both paths: a local `chroma run` server, like the embedded
    client, has no hybrid `Collection.search` (it answers that search is not implemented)."""
    settings = RetrievalSettings("hybrid", "rrf", 0.5)

    def answers(store):
        _, run, indexed = _setup(store, tmp_path / store.settings.describe().replace(" ", "_"), cached_minilm)
        r = Retriever(store, indexed.collection, run.chunks, cached_minilm, settings=settings,
                      lexical=indexed.lexical, explain=True)
        return indexed, [[(h.chunk.chunk_id, round(h.score, 6), h.dense_rank, h.lexical_rank) for h in found]
                         for found in r.search_many(QUESTIONS, 3)]

    _, embedded = answers(VectorStore(StoreSettings(path=tmp_path / "embedded")))
    with chroma_server(tmp_path / "server-data") as port:
        store = VectorStore(StoreSettings(host="127.0.0.1", port=port))
        indexed, served = answers(store)
        from chromadb import Knn, Search

        col = store.client.get_collection(indexed.collection)
        with pytest.raises(Exception, match="(?i)not implemented"):
            col.search(Search().rank(Knn(query=[0.0] * 384)).limit(3))
    assert embedded == served
