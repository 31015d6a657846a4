"""LGMGC's scorer on llama.cpp (the bundled GGUF in-process): probabilities from one evaluation per window that
agree with the torch scorer where lg decides, a key of its own, and lg chunks with exact spans."""

from __future__ import annotations

import pytest

from core import text as T
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError
from core.schema.documents import Document

pytest.importorskip("llama_cpp", reason="llama-cpp-python comes with requirements-server.txt (the test setup)")

TEXT = ("Clean the filter every two weeks. Rinse it in water. Let it dry in the shade before use.\n\n"
        "The remote control needs two AAA batteries. Replace both at the same time.")


@pytest.fixture(scope="module")
def scorer():
    from core.methods.lgmgc.scoring_llamacpp import LlamaCppEosScorer

    return LlamaCppEosScorer()


def test_probabilities_are_read_at_every_position_from_one_evaluation(scorer):
    ends = sorted({e for _, e in T.sentences(TEXT)})
    mid = TEXT.index(" every")
    before = scorer.forward_passes
    probs = scorer.score(TEXT, [mid, *ends]).probabilities
    assert scorer.forward_passes == before + 1 and len(probs) == len(ends) + 1
    assert all(0.0 <= p <= 1.0 for p in probs)
    assert probs[0] < min(probs[1:])  # every sentence end beats a mid-clause word
    scorer.score(TEXT, [mid, *ends])
    assert scorer.forward_passes == before + 1  # the same window again is not evaluated again


def test_it_agrees_with_the_torch_scorer_on_where_to_cut(scorer, tmp_path):
    from core.methods.lgmgc.scoring import EosScorer

    torch_scorer = EosScorer(cache_dir=tmp_path / "models")
    ends = sorted({e for _, e in T.sentences(TEXT)})
    ours, theirs = scorer.score(TEXT, ends).probabilities, torch_scorer.score(TEXT, ends).probabilities
    assert max(range(len(ends)), key=ours.__getitem__) == max(range(len(ends)), key=theirs.__getitem__)
    assert scorer.key != torch_scorer.key and scorer.key.startswith("scorer:llamacpp:")


def test_lg_on_llama_cpp_gives_exact_spans_within_theta(scorer):
    text = (TEXT + "\n\n") * 6
    result = make_chunker("lgmgc:theta=40:min_words=5", ChunkerContext(scorer=scorer)).chunk(Document("d", "d", text))
    parents = [c for c in result.chunks if c.parent_id is None]
    assert len(parents) >= 3 and all(text[c.start:c.end] == c.text for c in result.chunks)
    assert all(T.count_words(c.text) <= 40 for c in parents)
    assert "llama.cpp" in result.trace["scorer"]


def test_a_file_that_is_not_a_gguf_is_one_clear_error(tmp_path):
    from core.methods.lgmgc.scoring_llamacpp import LlamaCppEosScorer

    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="cannot load GGUF model"):
        LlamaCppEosScorer(str(bad)).score("Some text.", [10])
    with pytest.raises(ConfigError, match="eos_mode"):
        LlamaCppEosScorer(eos_mode="tokens")


def test_the_flag_reaches_the_scorer_service(tmp_path):
    from core.cli.flags import build_parser, settings_from_flags
    from core.methods.lgmgc.scoring_llamacpp import LlamaCppEosScorer
    from core.services import build_services

    args = build_parser().parse_args(["bench", "--data", "x", "--chunkers", "lgmgc", "--scorer-engine", "llamacpp",
                                      "--eos-mode", "paragraph", "--workspace", str(tmp_path)])
    scorer = build_services(settings_from_flags(args), needs={"scorer"}).get("scorer")
    assert isinstance(scorer, LlamaCppEosScorer) and scorer.key.endswith(":paragraph")
