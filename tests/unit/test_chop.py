"""CHOP without a server: answer parsing, the rule backend, prefix placement, continuity bookkeeping,
boundary scoring, and CNM-aware retrieval on the project's sample manuals."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.ingest.datasets import joined, load_dataset
from core.ingest.documents import join_documents
from core.methods.chop.cnm import CNM, first_json_object, parse_cnm, parse_continuity, prefix_text
from core.methods.chop.continuity import score_boundaries
from core.methods.chop.rules import RuleCnm, model_candidates, models_match
from core.schema.documents import Document
from tests.support.data import ROOT

SAMPLE = ROOT / "sample_data" / "qa"


def test_first_json_object_is_pulled_out_of_chatty_answers():
    raw = 'Sure! Here it is:\n```json\n{"category": "fan", "nouns": ["fan blade"], "model": "F30"}\n```\nHope it helps.'
    assert first_json_object(raw) == {"category": "fan", "nouns": ["fan blade"], "model": "F30"}
    assert first_json_object("no json {here") is None


@pytest.mark.parametrize(
    ("raw", "expected", "error"),
    [
        ('{"category": "camera", "nouns": "camera battery", "model": "X100", "confidence": "0.8"}',
         CNM(category="camera", nouns=["camera battery"], model="X100", confidence=0.8), None),
        ('{"category": "null", "nouns": ["a", "b", "c"], "model": ["225B"], "confidence": 7}',
         CNM(category=None, nouns=["a", "b"], model="225B", confidence=1.0), None),
        ('{"category": "fan", "nouns": {"bad": 1}}', CNM(), "invalid CNM JSON"),
        ('{"category": "air', CNM(), "no JSON object"),
    ],
)
def test_cnm_answers_validate_or_become_null_with_an_error(raw, expected, error):
    cnm, err = parse_cnm(raw)
    assert cnm == expected
    assert (err is None) if error is None else (error in err)


def test_continuity_answers():
    assert parse_continuity('{"same": false, "reason": "new model"}') == (False, "new model", None)
    assert parse_continuity('{"same": "TRUE"}')[0] is True
    assert parse_continuity("FALSE - the category changes")[:2] == (False, "")
    same, _, err = parse_continuity("I cannot tell.")
    assert same is True and "kept as same" in err


def test_rule_backend_reads_models_and_categories():
    rule = RuleCnm()
    cnm = rule.extract_one("Nordwind 225B air conditioner. Clean the air filter of the air conditioner. The remote "
                           "control needs two AAA batteries. Refrigerant R32, 220V, IP24.")
    assert cnm.category == "air conditioner" and cnm.model == "225B"
    assert cnm.nouns[0] == "air conditioner filter"
    assert set(model_candidates("IP68 R410A 5000mAh 4K 12MP CR2032 AAA E4")) == set()
    assert models_match("Galaxy S10", "S10") and not models_match("S10", "S10e")
    same, reason = rule.decide_one("The 225B unit cools the room.", "The 226R heat pump. Press 226R mode.")
    assert not same and "226R" in reason
    assert rule.decide_one("Clean the filter.", "# Lumora X200 Camera - User Manual\n\nCharge it.")[0] is False
    assert rule.decide_one("Clean the filter monthly.", "Rinse the filter in water.")[0] is True


def test_prefix_text_leaves_out_empty_fields():
    assert prefix_text(CNM(category="fan", nouns=["fan blade", "motor"], model=None)) == \
        "[Category: fan | Nouns: fan blade, motor]"
    assert prefix_text(CNM()) == ""


def _stream():
    ds = load_dataset(SAMPLE)
    return join_documents(ds.documents[:3])


def test_chop_spans_prefixes_and_piecewise_constant_cnm():
    stream = _stream()
    chop = make_chunker("chop", ChunkerContext(llm=RuleCnm()))
    result = chop.chunk(stream)
    chunks = result.chunks
    assert all(stream.text[c.start : c.end] == c.text for c in chunks)
    assert chunks[0].meta["cnm_source"] == "extracted" and chunks[0].meta["continuity"] is None
    for prev, cur in zip(chunks, chunks[1:]):
        if cur.meta["continuity"]:
            assert cur.meta["cnm"] == prev.meta["cnm"] and cur.meta["cnm_source"] == "inherited"
        else:
            assert cur.meta["cnm_source"] == "extracted"
    assert chunks[0].embed_text.startswith(chunks[0].prefix + "\n")
    breaks = sum(1 for c in chunks[1:] if c.meta["continuity"] is False)
    assert result.trace["cd_calls"] == len(chunks) - 1 and result.trace["cnm_calls"] == breaks + 1
    after = make_chunker("chop:prefix=after", ChunkerContext(llm=RuleCnm())).chunk(stream).chunks
    assert after[0].embed_text.endswith("\n" + after[0].prefix)
    bare = make_chunker("chop:prefix=none", ChunkerContext(llm=RuleCnm())).chunk(stream).chunks
    assert bare[0].embed_text == bare[0].text and bare[0].meta["cnm"] == chunks[0].meta["cnm"]


class RecordingRules(RuleCnm):
    """The rule backend, keeping every (anchor, current) pair it was asked to judge."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[str, str]] = []

    def decide(self, pairs, progress=None):
        self.pairs.extend(pairs)
        return super().decide(pairs, progress)


# four windows of 24 tokens that drift from one model to another: each names the model of the one before it,
# so no adjacent pair changes model, but the third names a model the first never does (twice)
DRIFT = " ".join([
    "Clean the filter of the 225B unit every week. The 225B cools the room quickly and quietly.",
    "The 225B and the 226R share one remote control and the same filter size, so keep one spare.",
    "The 226R heat pump is quiet at night. Press 226R mode to switch the unit on at once.",
    "Rinse the 226R filter in warm water. The 226R filter dries in an hour.",
])


def test_anchor_mode_compares_against_the_run_start():
    doc = Document("d", "", DRIFT)
    runs = {}
    for mode in ("pairs", "anchor"):
        backend = RecordingRules()
        result = make_chunker(f"chop:size=24:overlap=0:mode={mode}", ChunkerContext(llm=backend)).chunk(doc)
        texts = [c.text for c in result.chunks]
        assert len(texts) == 4 and texts[0].startswith("Clean") and texts[3].startswith("Rinse")
        runs[mode] = (result, backend.pairs, texts)
    (pairs, pairs_asked, texts), (anchor, anchor_asked, _) = runs["pairs"], runs["anchor"]
    # pairs: each window against the one before it; no neighbour names a new model
    assert pairs_asked == [(texts[0], texts[1]), (texts[1], texts[2]), (texts[2], texts[3])]
    assert pairs.trace["decisions"] == [None, True, True, True]
    # anchor: against the first window of the current run, which the FALSE at window 2 moves to window 2
    assert anchor_asked == [(texts[0], texts[1]), (texts[0], texts[2]), (texts[2], texts[3])]
    assert anchor.trace["decisions"] == [None, True, False, True]
    assert anchor.trace["reasons"][2] == "new model: 225B -> 226R"
    assert [c.meta["cnm_from"] for c in anchor.chunks] == [0, 0, 2, 2]
    assert [c.meta["cnm"]["model"] for c in anchor.chunks] == ["225B", "225B", "226R", "226R"]
    assert {c.meta["cnm"]["model"] for c in pairs.chunks} == {"225B"}  # one run: the first window's CNM throughout


def test_rule_backend_finds_the_sample_joins():
    stream = _stream()
    chunks = make_chunker("chop", ChunkerContext(llm=RuleCnm())).chunk(stream).chunks
    scores = score_boundaries([c.end for c in chunks], [c.meta["continuity"] for c in chunks], stream.joins)
    assert scores.true == 2 and scores.recall == 1.0


def test_boundary_scoring_by_hand():
    ends = [100, 200, 300, 400, 500]
    # join at 250: the straddling window is 2, the next is 3; a FALSE at 3 counts, one at 1 does not
    s = score_boundaries(ends, [None, False, True, False, True], [250])
    assert (s.predicted, s.true, s.matched) == (2, 1, 1)
    assert s.precision == 0.5 and s.recall == 1.0 and s.f1 == pytest.approx(2 / 3)
    assert score_boundaries(ends, [None, True, True, True, True], [250]).f1 == 0.0


def test_each_decision_is_judged_against_the_true_joins():
    from core.methods.chop.continuity import judge_decisions

    text = "".join(chr(97 + i % 26) for i in range(600))
    starts, ends = [0, 100, 200, 300, 400, 500], [150, 250, 350, 450, 550, 600]
    # joins at 220 (window 1 straddles it: its FALSE finds it, window 2's is one too many) and 480 (windows 4
    # and 5 say TRUE: missed, shown at window 4)
    judged = judge_decisions(text, starts, ends, [None, False, False, True, True, True],
                             [None, "new model", "new model", "", "", ""], [220, 480], context=10)
    assert [d.label for d in judged] == ["start", "found join", "false alarm", "correct continue", "missed join",
                                         "correct continue"]
    assert judged[1].join == 220 and judged[4].join == 480 and judged[2].join is None
    assert judged[1].before == text[90:100] and judged[1].after == text[100:110] and judged[1].reason == "new model"
    assert [d.label for d in judge_decisions(text, starts, ends, [None, True, False, True, True, True], [""] * 6,
                                             [])] == ["start", "correct continue", "false alarm"] + [
                                                 "correct continue"] * 3


def test_cnm_filter_beats_plain_chop_on_the_sample_set(cached_minilm, workspace):
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.services import Services
    from core.settings import Settings
    from core.store.index import StoreSettings, VectorStore

    ds = load_dataset(SAMPLE)
    store = VectorStore(StoreSettings(path=workspace.chroma))
    services = Services(Settings(workspace=str(workspace.root)), workspace, cached_minilm, store, {"llm": RuleCnm()})
    # the same chunks and prefixes (retrieval settings are not part of the identity): only the filter differs
    report = bench_dataset(ds, ["chop", "chop:retrieval=filter"], BenchOptions([1, 10], qualify_queries=True),
                           services)
    r = report.to_json()["results"]
    assert r["chop"]["llm_calls"] == 0 and r["chop"]["boundary_f1"] is None
    assert r["chop:retrieval=filter"]["cached"] == {"chunks": True, "collection": True}  # plain chop's run
    assert r["chop:retrieval=filter"]["hit@10"] > r["chop"]["hit@10"]
    assert r["chop:retrieval=filter"]["mrr@10"] > r["chop"]["mrr@10"]
    stream_report = bench_dataset(ds, ["chop"], BenchOptions([1], join=True), services)
    assert stream_report.results["chop"].get("boundary_recall") == 1.0


def test_question_without_model_falls_back_to_plain_search(cached_minilm, workspace):
    from core.methods.chop.policy import CnmPolicy
    from core.pipeline import chunk_documents, index_run
    from core.store.index import StoreSettings, VectorStore
    from core.store.retrieval import Retriever

    docs = [Document("a", "A", "Nordwind 225B air conditioner. Clean the filter every two weeks."),
            Document("b", "B", "Nordwind 226R air conditioner. Clean the filter every four weeks.")]
    chop = make_chunker("chop", ChunkerContext(llm=RuleCnm()))
    run = chunk_documents(docs, chop)
    store = VectorStore(StoreSettings(path=workspace.chroma))
    idx = index_run(run, docs, cached_minilm, store)
    r = Retriever(store, idx.collection, run.chunks, cached_minilm, CnmPolicy("filter", RuleCnm()))
    answer = r.ask("226R: how often do I clean the filter?", 2)
    assert [h.chunk.doc_id for h in answer.hits] == ["b"] and answer.tags.applied == "filter"
    answer = r.ask("how often do I clean the filter?", 2)
    assert len(answer.hits) == 2 and answer.tags.applied.startswith("none")
    boosted = Retriever(store, idx.collection, run.chunks, cached_minilm, CnmPolicy("boost", RuleCnm(), boost=0.5))
    top = boosted.search("226R: how often do I clean the filter?", 2)
    assert top[0].chunk.doc_id == "b" and top[0].tag_match == 1.0 and top[0].score == pytest.approx(
        top[0].similarity + 0.5)


def test_joined_dataset_keeps_gold_text():
    ds = load_dataset(SAMPLE)
    stream = joined(ds)
    for q_plain, q_joined in zip(ds.questions, stream.questions):
        (a,), (b,) = q_plain.references, q_joined.references
        doc = next(d for d in ds.documents if d.doc_id == a.doc_id)
        assert doc.text[a.start : a.end] == stream.documents[0].text[b.start : b.end]


def test_model_variants_are_other_models():
    # near-duplicate manuals of one product line: the variant words are part of the model
    assert model_candidates("Samsung Galaxy S10 Lite user manual")["S10 Lite"] == 1
    assert "S20 Ultra 5G" in model_candidates("Galaxy S20 Ultra 5G")
    assert "S7 Active" in model_candidates("Galaxy S7 Active")
    assert "225B" in model_candidates("switch the 225B lite mode on")  # lower case: a word, not a variant
    assert models_match("Galaxy S10", "S10") and models_match("225b", "Nordwind 225B")
    assert not models_match("S10", "S10 Lite") and not models_match("S20", "S20 Ultra 5G")
    assert not models_match("Note 10", "Note") and not models_match("S10", "S10e")


def test_a_filtered_question_searches_the_lexical_side_without_the_model_it_matched():
    """Once the filter kept one model's chunks, every chunk left names it: its words would only favour the
    chunks that repeat the name (measured: hit@1 of chop:retrieval=filter on the sample set 0.32 -> 0.41)."""
    from core.methods.chop.policy import CnmPolicy

    policy = CnmPolicy("filter", RuleCnm())
    assert policy.residual_query("Nordwind 226R: how often do I clean the filter?", {"model": "226R"}) == \
        "Nordwind : how often do I clean the filter?"
    assert policy.residual_query("Shades 2020 lifetime", {"model": "Shades 2020"}) == "  lifetime"
    assert policy.residual_query("S10 Lite", {"model": "S10 Lite"}) == "S10 Lite"  # nothing left: as it was
    assert policy.residual_query("clean the filter", {}) == "clean the filter"


def test_the_library_is_learned_once_and_only_when_needed(tmp_path):
    """An `extract` backend learns the library for the chunker's own copy: when the first document is chunked,
    or, for a run loaded from the cache, when its policy first tags a question; never twice."""
    from core.methods.chop.extract import ExtractCnm
    from core.pipeline import chunk_documents

    class Counting(ExtractCnm):
        calls = 0

        def learned(self, documents):
            Counting.calls += 1
            return super().learned(documents)

    docs = load_dataset(ROOT / "sample_data" / "qa").documents[:2]
    fresh = make_chunker("chop:retrieval=filter", ChunkerContext(llm=Counting()))
    chunk_documents(docs, fresh, tmp_path)
    fresh.retrieval_policy()
    assert Counting.calls == 1
    cached = make_chunker("chop:retrieval=filter", ChunkerContext(llm=Counting()))
    run = chunk_documents(docs, cached, tmp_path)
    assert run.from_cache and Counting.calls == 1  # a reload that asks nothing learns nothing
    policy = cached.retrieval_policy()
    assert Counting.calls == 2 and policy.backend is cached.retrieval_policy().backend  # learned once
    assert policy.backend is not cached.context.get("llm")  # a copy: the shared backend stays as it was
