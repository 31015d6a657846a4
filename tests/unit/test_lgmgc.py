"""LGMGC with the real bundled SmolLM2: exact spans, one forward pass per window, parents scored by their best
child, Chinese text; plus the multi-granular split over another chunker's parents and LumberChunker."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import text as T
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.store.hits import parents_by_best_child

pytestmark = pytest.mark.slow

EN = ("The air filter should be cleaned every two weeks. Rinse it in lukewarm water and let it dry. "
      "Never run the unit without its filter. ") * 6 + "\n\n" + (
      "The camera battery charges in three hours. The lamp turns green when charging is complete. "
      "Remove the battery before long storage. ") * 6


class CountingScorer:
    """Wraps the real scorer to count calls made by the chunker itself."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0
        self.label, self.key = inner.label, inner.key

    @property
    def forward_passes(self) -> int:
        return self.inner.forward_passes

    def score(self, text, positions):
        self.calls += 1
        return self.inner.score(text, positions)


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    from core.methods.lgmgc.scoring import EosScorer

    return EosScorer(cache_dir=tmp_path_factory.mktemp("models"))


def test_lg_spans_and_one_forward_pass_per_window(scorer):
    counting = CountingScorer(scorer)
    doc = Document("d", "d", EN)
    result = make_chunker("lg:theta=40:min_words=5", ChunkerContext(scorer=counting)).chunk(doc)
    chunks = result.chunks
    assert all(EN[c.start : c.end] == c.text for c in chunks)
    assert all(T.count_words(c.text) <= 40 for c in chunks)
    assert not EN[chunks[-1].end :].strip() and chunks[0].start == 0
    scored_windows = [w for w in result.trace["windows"] if w["positions"]]
    assert counting.calls == len(scored_windows) >= 2  # one scoring call per window
    # one forward pass per distinct window (this text repeats itself: equal windows are scored once)
    distinct = {(EN[w["start"] : w["end"]], tuple(p - w["start"] for p in w["positions"])) for w in scored_windows}
    assert result.trace["forward_passes"] == len(distinct)
    assert result.trace["windows_scored"] == len(scored_windows)  # what a cold run costs
    for w in scored_windows:
        assert len(w["p"]) == len(w["positions"]) and w["split"] in w["positions"]
        assert w["p"][w["positions"].index(w["split"])] == max(w["p"])  # the split is at the highest p(EOS)
        assert all(0.0 <= p <= 1.0 for p in w["p"])


def test_scores_match_the_full_output_layer_and_bfloat16_picks_the_same_split(scorer):
    """Only the read positions go through the output layer; that must equal reading the full logits."""
    import torch

    from core.llm.local_model import load_causal_lm
    from core.methods.lgmgc.scoring import INSTRUCTION, EosScorer

    text = "Clean the filter every two weeks. Rinse it in water. Let it dry in the shade before use."
    ends = [text.index(".") + 1, text.index("water.") + 6, len(text)]
    fast = scorer.score(text, ends).probabilities
    tok, lm = load_causal_lm(scorer.model_name, scorer.cache_dir)
    head = tok.apply_chat_template([{"role": "user", "content": INSTRUCTION + "\n\n"}], tokenize=False)
    prefix = head[: head.index(INSTRUCTION) + len(INSTRUCTION) + 2]
    enc = tok(prefix + text, return_offsets_mapping=True, add_special_tokens=False, return_tensors="pt")
    offsets = [e - len(prefix) for _, e in enc.pop("offset_mapping")[0].tolist()]
    with torch.inference_mode():
        probs = torch.softmax(lm(**enc).logits[0].float(), dim=-1)
    eos_ids = scorer._token_sets(tok)[0]
    for pos, p in zip(ends, fast):
        row = max(i for i, e in enumerate(offsets) if 0 < e <= pos)
        assert p == pytest.approx(float(probs[row, eos_ids].sum()), rel=1e-4, abs=1e-7)
    half = EosScorer(cache_dir=Path(scorer.cache_dir), dtype="bfloat16")
    assert "bfloat16" in half.key and half.key != scorer.key  # different numbers, different caches
    slow = half.score(text, ends).probabilities
    assert max(range(3), key=lambda i: slow[i]) == max(range(3), key=lambda i: fast[i])
    with pytest.raises(ConfigError, match="dtype"):
        EosScorer(dtype="int4")


def test_eos_probability_is_higher_at_a_sentence_end(scorer):
    text = "Clean the filter every two weeks. Rinse it in water"
    mid = text.index(" every")  # mid-clause
    end = text.index(".") + 1
    probs = scorer.score(text, [mid, end]).probabilities
    assert probs[1] > probs[0]


def test_lgmgc_children_sit_inside_their_parents(scorer):
    doc = Document("d", "d", EN)
    chunks = make_chunker("lgmgc:theta=40:min_words=5", ChunkerContext(scorer=scorer)).chunk(doc).chunks
    parents = {c.chunk_id: c for c in chunks if c.parent_id is None}
    children = [c for c in chunks if c.parent_id]
    assert parents and children
    for c in children:
        p = parents[c.parent_id]
        assert p.start <= c.start < c.end <= p.end and EN[c.start : c.end] == c.text
        assert T.count_words(c.text) <= (20 if c.child.startswith("h") else 10)


def test_chinese_text(scorer):
    zh = "这是空调的使用说明。请每两周清洁一次过滤网。不要在没有过滤网的情况下运行。" * 8
    chunks = make_chunker("lgmgc:theta=30:min_words=5", ChunkerContext(scorer=scorer)).chunk(
        Document("z", "z", zh)).chunks
    assert all(zh[c.start : c.end] == c.text for c in chunks)
    assert sum(1 for c in chunks if c.parent_id is None) >= 2


def test_mg_over_recursive_parents_needs_no_model():
    doc = Document("d", "d", EN)
    chunks = make_chunker("mg:theta=40", ChunkerContext()).chunk(doc).chunks
    parents = [c for c in chunks if c.parent_id is None]
    recursive = make_chunker("recursive:theta=40").chunk(doc).chunks
    assert [(c.start, c.end) for c in parents] == [(c.start, c.end) for c in recursive]


def test_parent_score_is_its_best_child():
    p1 = Chunk("d", 0, 100, "x" * 100, 10, index=0)
    p2 = Chunk("d", 100, 200, "y" * 100, 10, index=1)
    kids = [Chunk("d", 0, 50, "x" * 50, 5, index=0, parent_id="d#0", child="h0"),
            Chunk("d", 50, 100, "x" * 50, 5, index=0, parent_id="d#0", child="h1"),
            Chunk("d", 100, 150, "y" * 50, 5, index=1, parent_id="d#1", child="h0")]
    by_id = {c.chunk_id: c for c in [p1, p2, *kids]}
    # child scores as Chroma returns them, best first
    found = [("d#1.h0", 0.9), ("d#0.h1", 0.7), ("d#0.h0", 0.4)]
    hits = parents_by_best_child(found, by_id, k=2)
    assert [(h.chunk.chunk_id, h.score, h.rank) for h in hits] == [("d#1", 0.9, 1), ("d#0", 0.7, 2)]
    assert [c.chunk_id for c, _ in hits[1].children] == ["d#0.h1", "d#0.h0"]
    assert parents_by_best_child(found, by_id, k=1)[0].chunk.chunk_id == "d#1"


def test_lumber_with_the_local_chat_model(tmp_path):
    from core.llm.factory import make_chat_client

    paragraphs = "\n\n".join([
        "Clean the air filter every two weeks.", "Rinse the filter in lukewarm water.",
        "The camera battery charges in three hours.", "Remove the battery before storage.",
        "Tomato soup needs basil.", "Simmer the soup for twenty minutes."])
    chat = make_chat_client("local", tmp_path)
    result = make_chunker("lumber:group_tokens=60", ChunkerContext(chat=chat)).chunk(Document("d", "d", paragraphs))
    assert all(paragraphs[c.start : c.end] == c.text for c in result.chunks)
    assert not paragraphs[result.chunks[-1].end :].strip()
    assert chat.stats.calls == len(result.trace["decisions"]) >= 1


def test_split_statistics_by_hand():
    from core.methods.lgmgc.chunker import split_statistics

    traces = [{"kind": "eos", "windows": [
        {"positions": [10, 20, 30], "p": [0.5, 0.2, 0.1], "split": 10},
        {"positions": [40, 50], "p": [0.1, 0.3], "split": 50},
        {"positions": [], "p": [], "split": 60},  # no sentence end: not a scored window
    ]}, {"kind": "similarity"}]
    stats = split_statistics(traces)
    assert stats == pytest.approx({"windows": 2, "split_at_first_candidate": 0.5, "split_at_last_candidate": 0.5,
                                   "candidates_per_window": 2.5, "mean_p_first_candidate": 0.3,
                                   "mean_p_last_candidate": 0.2})
    assert split_statistics([{"kind": "similarity"}]) is None


@pytest.mark.parametrize(("spec", "message"), [
    ("mg:parents=naive-500t", "a chunker sized by theta"), ("mg:parents=sentence", "a chunker sized by theta"),
    ("mg:parents=mg", "single-level"), ("mg:parents=nope", "unknown chunker 'nope'")])
def test_mg_refuses_parents_it_cannot_size_when_it_is_built(spec, message):
    with pytest.raises(ConfigError, match=message):
        make_chunker(spec)
    assert make_chunker("mg:parents=lg").needs == ("scorer",)
