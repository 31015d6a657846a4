"""The lexical side: tokens (English and CJK), BM25 scores by hand, fusion arithmetic, the persisted index."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from core.schema.chunks import Chunk
from core.store.fusion import fuse_rrf, fuse_weighted, minmax
from core.store.lexical import MANIFEST, TOKENIZER_VERSION, LexicalIndex, LexicalStore, lexical_name, lexical_tokens
from core.store.retrieval import RetrievalSettings


def chunk(i: int, text: str, prefix: str = "") -> Chunk:
    return Chunk("d", i * 100, i * 100 + len(text), text, len(text.split()), index=i, prefix=prefix)


def test_english_words_are_case_folded_and_stemmed_without_stop_words():
    assert lexical_tokens("The filters are cleaned") == ["filter", "clean"]
    assert lexical_tokens("Charging the battery") == ["charg", "batteri"]


def test_model_numbers_stay_tokens_and_full_width_text_is_normalised():
    assert lexical_tokens("Galaxy S10e, SM-G973F") == ["galaxi", "s10e", "sm", "g973f"]
    assert lexical_tokens("ＳＭ－Ｇ９７３Ｆ") == ["sm", "g973f"]  # NFKC: full-width letters and digits


def test_the_analyzer_is_the_one_the_study_chose():
    """t2, chosen in docs/RETRIEVAL.md ("BM25 analyzer, chosen by measurement"): t1 without one-character Latin
    tokens; the Snowball stemmer stays."""
    assert TOKENIZER_VERSION == "t2"
    # stemming: a plural, a past tense and an -ing form meet their stem
    assert lexical_tokens("Batteries charged, charging") == ["batteri", "charg", "charg"]
    # model numbers split at hyphens only, with no joined form; letters and digits stay together
    for text, want in [("SM-G973F", ["sm", "g973f"]), ("S10e", ["s10e"]), ("WH-1000XM4", ["wh", "1000xm4"]),
                       ("RT-AX88U", ["rt", "ax88u"])]:
        assert lexical_tokens(text) == want
    # one-character Latin letters and digits are dropped (they match nearly every chunk); other scripts stay
    assert lexical_tokens("Step 1: press B, then a x_y α é") == ["step", "press", "α"]
    # bm25s's English stop words are dropped, and only those
    assert lexical_tokens("it is in the box of the unit") == ["box", "unit"]
    assert lexical_tokens("更换滤网 xy") == ["更换", "换滤", "滤网", "xy"]  # CJK bigrams as before


def test_an_index_with_another_analyzer_searches_with_it_and_is_never_saved(tmp_path):
    units = [chunk(0, "Bat"), chunk(1, "battery pack")]
    assert [cid for cid, _ in LexicalIndex.build(units).search("battery", 5)] == ["d#1"]

    def upper(text: str) -> list[str]:
        return [text.upper()[:3]]  # one token per text, its first three letters: both chunks read "BAT"

    other = LexicalIndex.build(units, upper)
    assert sorted(cid for cid, _ in other.search("battery", 5)) == ["d#0", "d#1"]
    with pytest.raises(ValueError, match="only an index of lexical_tokens"):
        other.save(tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_cjk_runs_become_character_bigrams():
    assert lexical_tokens("更换滤网") == ["更换", "换滤", "滤网"]
    assert lexical_tokens("滤") == ["滤"]  # a lone character stays a unigram
    # mixed text: latin words and CJK runs are split apart, kana and hangul included
    assert lexical_tokens("225B空调の清洁") == ["225b", "空调", "调の", "の清", "清洁"]
    assert lexical_tokens("필터 청소") == ["필터", "청소"]


def test_bm25_scores_match_lucene_formula_by_hand():
    texts = ["filter filter clean", "clean battery", "battery charger battery battery"]
    index = LexicalIndex.build([chunk(i, t) for i, t in enumerate(texts)])
    k1, b = 1.5, 0.75
    lengths = [3, 2, 4]
    avg = sum(lengths) / 3

    def term(tf: int, df: int, dl: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        # Lucene 8's form, which drops the constant (k1 + 1) of the numerator (the ranking is the same)
        return idf * tf / (tf + k1 * (1 - b + b * dl / avg))

    got = index.scores("battery")
    want = [0.0, term(1, 2, 2), term(3, 2, 4)]
    assert got == pytest.approx(want, rel=1e-5)
    both = index.scores("clean the filter")
    assert both[0] == pytest.approx(term(2, 1, 3) + term(1, 2, 3), rel=1e-5)
    assert [cid for cid, _ in index.search("battery", 5)] == ["d#2", "d#1"]  # no zero-score chunk is returned
    assert index.search("nothing matches", 5) == [] and index.scores("") == pytest.approx([0, 0, 0])
    assert LexicalIndex.rank_of(got, 2) == 1 and LexicalIndex.rank_of(got, 1) == 2
    assert LexicalIndex.rank_of(got, 0) is None


def test_the_index_reads_the_prefix_as_well_as_the_span():
    units = [chunk(0, "Replace the filter.", "[Model: 225B]"), chunk(1, "Replace the filter.", "[Model: 226R]")]
    index = LexicalIndex.build(units)
    assert [cid for cid, _ in index.search("filter 226R", 2)] == ["d#1", "d#0"]
    mask = np.array([True, False])
    assert [cid for cid, _ in index.search("filter 226R", 2, mask)] == ["d#0"]


def test_rrf_fusion_by_hand():
    dense = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    lexical = [("c", 12.0), ("a", 3.0)]
    fused = {c.cid: c for c in fuse_rrf(dense, lexical, 0.5, 60)}
    assert fused["a"].score == pytest.approx(0.5 / 61 + 0.5 / 62)
    assert fused["b"].score == pytest.approx(0.5 / 62)
    assert fused["c"].score == pytest.approx(0.5 / 63 + 0.5 / 61)
    assert [c.cid for c in fuse_rrf(dense, lexical, 0.5, 60)] == ["a", "c", "b"]
    assert (fused["c"].dense_rank, fused["c"].lexical_rank, fused["b"].lexical_rank) == (3, 1, None)
    # all weight on the lexical side: the BM25 order, then what only the dense side found
    assert [c.cid for c in fuse_rrf(dense, lexical, 1.0, 60)][:2] == ["c", "a"]


def test_weighted_fusion_by_hand():
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    lexical = [("c", 10.0), ("b", 6.0), ("d", 2.0)]
    assert minmax([0.9, 0.5, 0.1]) == pytest.approx([1.0, 0.5, 0.0]) and minmax([3.0, 3.0]) == [1.0, 1.0]
    fused = {c.cid: c.score for c in fuse_weighted(dense, lexical, 0.25)}
    assert fused == pytest.approx({"a": 0.75, "b": 0.75 * 0.5 + 0.25 * 0.5, "c": 0.25, "d": 0.0})


def test_retrieval_settings_are_checked():
    from core.infra.errors import ConfigError

    for bad in ({"mode": "sparse"}, {"fusion": "max"}, {"lexical_weight": -0.1}, {"pool": 0}):
        with pytest.raises(ConfigError):
            RetrievalSettings(**bad)
    assert RetrievalSettings().describe() == {"mode": "dense"}
    hybrid = RetrievalSettings("hybrid", "weighted", 0.3).describe()
    assert hybrid["fusion"] == "weighted" and hybrid["lexical_weight"] == 0.3 and "lexical" in hybrid


def test_the_index_is_persisted_reused_and_rebuilt_when_it_no_longer_fits(tmp_path):
    units = [chunk(i, t) for i, t in enumerate(["clean the filter", "charge the battery"])]
    name = lexical_name("cl-abc")
    index, built = LexicalStore(tmp_path).get(name, units)
    assert built and (tmp_path / name / MANIFEST).exists()
    # a new store on the same folder (a restart): loaded from disk, same scores
    again, built = LexicalStore(tmp_path).get(name, units)
    assert not built and again.scores("battery") == pytest.approx(index.scores("battery"))
    # other chunks under the same name (never expected, but never trusted): rebuilt
    other = [chunk(i, t) for i, t in enumerate(["clean the filter", "charge the battery", "fan speed"])]
    _, built = LexicalStore(tmp_path).get(name, other)
    assert built
    # a damaged index is rebuilt, not loaded
    (tmp_path / name / MANIFEST).write_text("{", encoding="utf-8")
    fixed, built = LexicalStore(tmp_path).get(name, other)
    assert built and json.loads((tmp_path / name / MANIFEST).read_text())["ids"] == fixed.ids
    assert lexical_name("cl-abc") != lexical_name("cl-abd")


def test_an_empty_run_has_an_empty_index(tmp_path):
    index, built = LexicalStore(tmp_path).get(lexical_name("cl-empty"), [])
    assert built and index.ids == [] and len(index.scores("anything")) == 0 and index.search("anything", 3) == []
    assert not any(tmp_path.iterdir())
