"""The second stage: the fusion of the two orders, sentence max-sim on the real MiniLM, a CrossEncoder folder, and
a `/rerank` server in both answer shapes over a real loopback socket (tests/support/rerank_server.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ChunkLensError, ConfigError
from core.pipeline import chunk_documents, index_run
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.settings import ADDRESS_FIELDS, OPERATOR_FIELDS, Settings, without_addresses
from core.store.index import StoreSettings, VectorStore
from core.store.lexical import LexicalStore
from core.store.rerank import CrossEncoderReranker, EndpointReranker, SentenceMaxSim, make_model_reranker, rerank_order
from core.store.retrieval import RetrievalSettings, Retriever
from tests.support.cli import run_cli
from tests.support.rerank_server import RerankServer, overlap_score

TEXT = ("The heater has three modes. Press MODE to switch between them. "
        "The filter sits behind the front grille and is washed in warm water every month. "
        "A long sentence that goes on about the warranty, which covers parts and labour for two years from the date "
        "of purchase, and which a single short chunk could sit inside of.")


def _chunk(start: int, end: int, index: int = 0, doc_id: str = "heater") -> Chunk:
    return Chunk(doc_id, start, end, TEXT[start:end], 1, index)


def test_rerank_order_fuses_the_first_rank_with_the_rerankers():
    scores = [0.1, 0.9, 0.5]
    assert rerank_order(scores, 1.0) == [1, 2, 0]  # the reranker's order alone
    assert rerank_order(scores, 0.0) == [0, 1, 2]  # the first stage's order alone
    # half and half: hit 1 (2nd, then 1st) beats hit 0 (1st, then 3rd) and hit 2 (3rd, then 2nd)
    assert rerank_order(scores, 0.5) == [1, 0, 2]
    assert rerank_order([0.3, 0.3], 1.0) == [0, 1]  # ties keep the first-stage order


def test_maxsim_scores_a_chunk_by_its_best_sentence(cached_minilm):
    maxsim = SentenceMaxSim(cached_minilm, {"heater": TEXT})
    question = "how often is the filter washed"
    q = cached_minilm.embed([question])[0]
    filter_sentence = "The filter sits behind the front grille and is washed in warm water every month. "
    whole = _chunk(0, len(TEXT))
    first_two = _chunk(0, TEXT.index(filter_sentence))
    inside_long = _chunk(TEXT.index("covers parts"), TEXT.index("covers parts") + 20, 1)
    got = maxsim.scores(question, q, [whole, first_two, inside_long])

    def cos(text: str) -> float:
        v = cached_minilm.embed([text])[0]
        return float(np.dot(q, v) / np.linalg.norm(q) / np.linalg.norm(v))

    assert got[0] == pytest.approx(cos(filter_sentence), abs=1e-5)  # the whole text scores its best sentence
    assert got[1] == pytest.approx(max(cos("The heater has three modes. "), cos("Press MODE to switch between them. ")),
                                   abs=1e-5)
    long_sentence = TEXT[TEXT.index("A long sentence"):]
    assert got[2] == pytest.approx(cos(long_sentence), abs=1e-5)  # a chunk inside one sentence gets that sentence
    assert got[0] > got[1]
    with pytest.raises(ChunkLensError, match="not known"):
        maxsim.scores(question, q, [_chunk(0, 10, doc_id="elsewhere")])



def test_maxsim_embeds_only_the_sentences_of_the_chunks_it_scores(cached_minilm):
    class Counting:
        key, seen = cached_minilm.key, []

        def embed(self, texts, progress=None):
            self.seen.extend(texts)
            return cached_minilm.embed(texts)

    counting = Counting()
    maxsim = SentenceMaxSim(counting, {"heater": TEXT})
    q = cached_minilm.embed(["modes"])[0]
    first = _chunk(0, TEXT.index("Press MODE"))
    maxsim.scores("modes", q, [first])
    assert [t.strip() for t in counting.seen] == ["The heater has three modes."]  # not the other three sentences
    maxsim.scores("modes", q, [first, _chunk(0, TEXT.index("The filter"))])
    assert [t.strip() for t in counting.seen] == ["The heater has three modes.",
                                                  "Press MODE to switch between them."]  # each once


DOCS = [Document("heater", "Heater manual", TEXT),
        Document("fan", "Fan manual", "The fan has two speeds. Its blades are wiped with a dry cloth every week. "
                 "The fan stops when it tips over.")]


def _retrievers(tmp_path, embedder, rerankers):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    chunker = make_chunker("sentence:max_tokens=16", ChunkerContext(embedder=embedder))
    run = chunk_documents(DOCS, chunker)
    indexed = index_run(run, DOCS, embedder, store, lexical=LexicalStore(tmp_path / "lexical"))
    plain = Retriever(store, indexed.collection, run.chunks, embedder, settings=RetrievalSettings("hybrid"),
                      lexical=indexed.lexical)
    out = {name: Retriever(store, indexed.collection, run.chunks, embedder, lexical=indexed.lexical,
                           settings=RetrievalSettings("hybrid", rerank=kind, rerank_depth=4), reranker=reranker)
           for name, (kind, reranker) in rerankers.items()}
    return plain, out, indexed


QUESTIONS = ["how often is the filter washed", "what happens when the fan tips over", "warranty length"]


def test_the_retriever_reorders_only_its_first_stage_head(tmp_path, cached_minilm):
    plain, built, indexed = _retrievers(tmp_path, cached_minilm,
                                        {"maxsim": ("maxsim", SentenceMaxSim(cached_minilm, indexed_texts(DOCS)))})
    first = plain.search_many(QUESTIONS, 4)
    again = built["maxsim"].search_many(QUESTIONS, 3)
    for q, before, after in zip(QUESTIONS, first, again):
        assert {h.chunk.chunk_id for h in after} <= {h.chunk.chunk_id for h in before}, q  # only the head moves
        by_id = {h.chunk.chunk_id: h.rank for h in before}
        assert [h.first_rank for h in after] == [by_id[h.chunk.chunk_id] for h in after]
        scores = [h.rerank_score for h in after]
        assert scores == sorted(scores, reverse=True)  # weight 1: the reranker's order
        assert [h.rank for h in after] == [1, 2, 3]
    with pytest.raises(ConfigError, match="needs a reranker"):
        Retriever(plain.store, plain.collection, list(plain.by_id.values()), cached_minilm,
                  settings=RetrievalSettings("hybrid", rerank="maxsim"), lexical=indexed.lexical)


def indexed_texts(docs) -> dict[str, str]:
    return {d.doc_id: d.text for d in docs}


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_a_rerank_server_in_either_shape_orders_the_hits(tmp_path, cached_minilm, shape):
    with RerankServer(shape).start() as server:
        reranker = make_model_reranker(server.url)
        assert isinstance(reranker, EndpointReranker)
        chunks = [_chunk(0, 60), _chunk(60, 150, 1), _chunk(150, len(TEXT), 2)]
        question = "filter washed in warm water"
        assert reranker.scores(question, np.zeros(1), chunks) == [overlap_score(question, c.text) for c in chunks]
        _, built, _ = _retrievers(tmp_path, cached_minilm, {"model": ("model", reranker)})
        hits = built["model"].search("which blades are wiped with a dry cloth", 2)
        assert "blades" in hits[0].chunk.text
        assert hits[0].rerank_score == max(h.rerank_score for h in hits)


def test_a_rerank_server_that_answers_nonsense_or_nothing_is_one_clear_line():
    with RerankServer("broken").start() as server:
        with pytest.raises(ChunkLensError, match="shape ChunkLens does not read"):
            EndpointReranker(server.url).scores("q", np.zeros(1), [_chunk(0, 20)])
        port = server.port
    with pytest.raises(ChunkLensError, match="did not answer"):
        EndpointReranker(f"http://127.0.0.1:{port}", timeout=2).scores("q", np.zeros(1), [_chunk(0, 20)])


def test_a_crossencoder_folder_scores_the_pairs_it_is_given(tmp_path):
    """A real CrossEncoder folder, made offline from the bundled MiniLM with a seeded one-label head (no reranker
    ships its weights in a package): the reranker's scores are the model's own for (question, chunk) pairs."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from core.store.embeddings import bundled_minilm_path

    torch.manual_seed(0)
    folder = tmp_path / "cross"
    AutoModelForSequenceClassification.from_pretrained(bundled_minilm_path(), num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(bundled_minilm_path()).save_pretrained(folder)
    reranker = make_model_reranker(str(folder))
    assert isinstance(reranker, CrossEncoderReranker)
    chunks = [_chunk(0, 60), _chunk(60, 150, 1)]
    got = reranker.scores("filter", np.zeros(1), chunks)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        logits = model(**tok(["filter"] * 2, [c.text for c in chunks], return_tensors="pt", padding=True)).logits
    want = torch.sigmoid(logits[:, 0]).tolist()  # CrossEncoder's default activation for one label
    assert got == pytest.approx(want, abs=1e-5)
    with pytest.raises(ConfigError, match="not a folder"):
        make_model_reranker(str(tmp_path / "missing"))


def test_the_reranker_address_is_the_operators():
    assert "rerank_model" in OPERATOR_FIELDS and "rerank_model" in ADDRESS_FIELDS
    saved = without_addresses(Settings(rerank="model", rerank_model="http://10.0.0.9:8080"))
    assert saved.rerank_model == "" and saved.rerank == "model"  # the choice is kept, the address is not


@pytest.mark.slow
def test_bench_reranks_through_a_server_and_records_it(tmp_path):
    out = tmp_path / "report.json"
    with RerankServer("cohere").start() as server:
        proc = run_cli("bench", "--data", "sample_data/qa", "--max-docs", "2", "--chunkers", "paragraph", "--k", "1,5",
                       "--rerank", "model", "--rerank-model", server.url, "--out", str(out), "--quiet",
                       workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["retrieval"]["rerank"] == "model" and report["retrieval"]["rerank_depth"] == 20
    bad = run_cli("bench", "--data", "sample_data/qa", "--chunkers", "paragraph", "--rerank", "model", "--quiet",
                  workspace=tmp_path / "ws")
    assert bad.returncode != 0 and "needs a reranker" in bad.stderr


def test_the_default_search_reranks_with_maxsim_at_its_measured_weight():
    from core.store.rerank import DEFAULT_WEIGHTS

    default = Settings().retrieval_settings()
    assert (default.rerank, default.rerank_depth) == ("maxsim", 20)
    assert default.rerank_weight == DEFAULT_WEIGHTS["maxsim"] and 0 < default.rerank_weight < 1
    assert RetrievalSettings(rerank="model").rerank_weight == 1.0  # a model's order is taken alone
    assert Settings(rerank_weight=0.7).retrieval_settings().rerank_weight == 0.7  # a chosen weight is kept
    assert default.describe()["rerank_weight"] == DEFAULT_WEIGHTS["maxsim"]
    assert "rerank" not in RetrievalSettings().describe()  # reports without a reranker keep their old keys


def _report(**per_chunker: tuple[float, float, float, float]) -> dict:
    """A bench report's results: chunker -> (hit@1, hit@10, mrr@10, span_recall@5)."""
    return {"results": {c: dict(zip(("hit@1", "hit@10", "mrr@10", "span_recall@5"), v))
                        for c, v in per_chunker.items()}}


def test_the_weight_rule_refuses_a_span_recall_loss_on_a_large_set():
    from bench.rerank import choose

    reports = {"emanual_q": {"none": _report(a=(0.5, 0.9, 0.6, 0.8)),
                             "maxsim-0.4": _report(a=(0.6, 0.9, 0.70, 0.8)),
                             "maxsim-0.5": _report(a=(0.6, 0.9, 0.72, 0.8))},
               "chroma_eval": {"none": _report(a=(0.7, 0.98, 0.80, 0.948)),
                               "maxsim-0.4": _report(a=(0.7, 0.98, 0.80, 0.949)),
                               "maxsim-0.5": _report(a=(0.7, 0.98, 0.81, 0.944))}}
    choice = choose(reports)
    assert choice["rows"]["maxsim-0.5"]["mean_mrr@10"] > choice["rows"]["maxsim-0.4"]["mean_mrr@10"]
    assert choice["rows"]["maxsim-0.5"]["worst_large_span_recall@5_loss"] == pytest.approx(0.004)
    assert choice["winner"] == "maxsim-0.4"  # 0.5 reads better on average but loses span recall on chroma_eval
    reports["emanual_q"]["maxsim-0.4"] = _report(a=(0.45, 0.9, 0.70, 0.8))  # 0.05 of hit@1 lost on one set
    assert choose(reports)["winner"] == "none"
