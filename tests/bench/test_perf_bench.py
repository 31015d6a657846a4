"""`python -m bench.perf` on a few thousand characters: every stage runs offline and the figures add up.

The peers are benchmark-only extras (requirements-bench.txt); CI does not install them, so the full run is skipped
there. The ratio arithmetic is a unit test of `bench.perf` itself (which needs no peer) and always runs.
"""

from __future__ import annotations

import json

import pytest

from bench import perf
from tests.support.data import ROOT

OURS = ("naive-500t", "recursive", "cosine", "semantic", "cosine (int8)", "semantic (int8)", "cosine (onnx fp32)",
        "semantic (onnx fp32)")
#: ours in the peers family only, beside the registered peers (no target of their own but the libraries they mirror)
OURS_BESIDE_PEERS = ("paragraph", "sentence")
PEERS_ALWAYS_THERE = ("chonkie TokenChunker", "chonkie RecursiveChunker", "chonkie SemanticChunker",
                      "langchain TokenTextSplitter", "langchain RecursiveCharacterTextSplitter")


@pytest.mark.slow
def test_small_run_times_every_stage_and_writes_json(tmp_path, capsys):
    pytest.importorskip("chonkie")
    pytest.importorskip("langchain_text_splitters")
    out = tmp_path / "perf.json"
    report = perf.main(["--data", str(ROOT / "sample_data" / "qa"), "--chars", "5000", "--semantic-chars", "3000",
                        "--repeat", "1", "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["input"]["chars"] == 5000 and report["input"]["semantic_chars"] == 3000
    assert report["machine"]["cpu_count"] >= 1 and report["memory_method"].startswith("psutil RSS")
    stages = {s["name"]: s for s in report["stages"]}
    for name in (*OURS, *OURS_BESIDE_PEERS, *PEERS_ALWAYS_THERE, *registered_peers(), "tiktoken cl100k encode",
                 "MiniLM embed sentences",
                 "int8 MiniLM embed sentences", "onnx fp32 MiniLM embed sentences"):
        stage = stages[name]
        assert stage["skipped"] == "", f"{name}: {stage['skipped']}"  # nothing tried to download
        assert stage["seconds"] > 0 and stage["mb_per_s"] > 0 and stage["count"] > 0
        assert stage["peak_rss_mb"] > 0
        assert name in printed
    for name in OURS:
        assert stages[name]["x_fastest_peer"] > 0 and stages[name]["x_floor"] > 0
    assert stages["cosine"]["chars"] == stages["semantic"]["chars"] == stages["cosine (int8)"]["chars"] == 3000
    # nearly equal vectors: a similarity near the threshold may fall on the other side, no more than that
    assert abs(stages["cosine (int8)"]["count"] - stages["cosine"]["count"]) <= max(1, stages["cosine"]["count"] // 10)
    assert stages["cosine (onnx fp32)"]["count"] == stages["cosine"]["count"]  # the same vectors, the same cuts
    assert stages["naive-500t"]["chars"] == 5000
    mirrored = [line for line in report["targets"] if "which it mirrors" in line]
    assert len(report["targets"]) == len(OURS) + len(mirrored) and "\ntargets\n" in printed
    assert {line.split()[0] for line in mirrored} == {ours for ours, libraries in perf.MIRRORS.items()
                                                     if any(lib in stages for lib in libraries)}


def registered_peers() -> list[str]:
    from core.chunkers.peers import PeerChunker
    from core.chunkers.registry import REGISTRY

    return sorted(name for name, cls in REGISTRY.items() if issubclass(cls, PeerChunker))


def test_every_registered_peer_is_a_stage_and_one_that_embeds_is_in_the_semantic_family():
    from core.chunkers.registry import make_chunker

    stages = {s.name: s for s in perf.registered_peer_stages(embedder=None)}
    assert sorted(s for s in stages if ":" not in s) == registered_peers() and "langchain-recursive" in stages
    assert [s for s in stages if ":" in s] == [s for s in perf.MATCHED_PEERS if s.split(":")[0] in stages]
    for name, stage in stages.items():
        embeds = "embedder" in make_chunker(name).needs
        assert stage.role == "peer" and stage.families == (("semantic",) if embeds else ("peers",))
        assert stage.semantic == embeds
    assert stages["langchain-recursive"].families == ("peers",)


def test_each_of_ours_is_checked_against_the_libraries_it_mirrors_that_ran():
    def result(name, role, seconds, family=("recursive",)):
        return perf.Result(name, family, role, chars=1000, mb=0.001, unit="chunks", runs=[seconds])

    results = [result("recursive", "ours", 1.0), result("chonkie RecursiveChunker", "peer", 2.0),
               result("langchain RecursiveCharacterTextSplitter", "peer", 0.8),
               result("naive-500t", "ours", 1.0, ("token",))]
    perf.add_ratios(results)
    lines = perf.mirror_lines(results)
    assert lines == ["  recursive   1.250x langchain RecursiveCharacterTextSplitter, which it mirrors (target <= 1.00: "
                     "MISSED)", "  recursive   0.500x chonkie RecursiveChunker, which it mirrors (target <= 1.00: met)"]
    assert lines == perf.target_lines(results)[-2:]  # naive-500t's libraries did not run: no line for it
    assert set(perf.MIRRORS) <= set(perf.TARGETS) | {"sentence"}


def test_a_stage_in_two_families_takes_its_ratios_from_its_first():
    def result(name, families, role, seconds):
        return perf.Result(name, families, role, chars=1000, mb=0.001, unit="chunks", runs=[seconds])

    results = [result("floor", ("recursive", "peers"), "floor", 1.0), result("recursive", ("recursive", "peers"),
                                                                             "ours", 2.0),
               result("library", ("recursive",), "peer", 4.0), result("registered", ("peers",), "peer", 1.0)]
    perf.add_ratios(results)
    assert results[1].x_fastest_peer == pytest.approx(0.5)  # against the recursive family's peer, not the peers'


def test_ratios_divide_by_the_fastest_peer_and_the_floor():
    def result(name, families, role, seconds):
        return perf.Result(name, families, role, chars=1000, mb=0.001, unit="chunks", runs=[seconds, seconds * 3])

    results = [result("floor", ("token", "recursive"), "floor", 1.0), result("naive-500t", ("token",), "ours", 3.0),
               result("slow peer", ("token",), "peer", 4.0), result("fast peer", ("token",), "peer", 2.0),
               result("recursive", ("recursive",), "ours", 1.2)]
    perf.add_ratios(results)
    by_name = {r.name: r for r in results}
    assert by_name["naive-500t"].seconds == 6.0  # median of [3, 9]
    assert by_name["naive-500t"].x_fastest_peer == pytest.approx(6.0 / 4.0)
    assert by_name["naive-500t"].x_floor == pytest.approx(3.0)
    assert by_name["recursive"].x_fastest_peer is None  # no recursive peer ran
    lines = "\n".join(perf.target_lines(results))
    assert "1.500x the fastest token peer (target <= 1.00: MISSED)" in lines
    assert "1.200x one tiktoken pass (target <= 1.30: met)" in lines


def test_every_timed_run_starts_without_the_texts_kept_sentences_and_word_index():
    """The chunkers share one document's sentences and word index in a process; a benchmark repeat must not."""
    from core import text as T

    seen = []

    def prepare(text):
        T.sentences(text)
        T.word_index(text)  # what an earlier repeat, or the set-up, leaves behind

        def run():
            seen.append((T._sentence_spans.cache_info().currsize, T.word_index.cache_info().currsize))
            return len(T.sentences(text))

        return run

    stage = perf.Stage("probe", ("recursive",), "ours", prepare)
    result = perf.Result("probe", ("recursive",), "ours", 0, 0.0, "chunks")
    for _ in range(2):
        perf.run_once(stage, "One sentence. Two sentences here. And three.", result)
    assert not result.skipped and result.count == 3 and len(result.runs) == 2
    assert seen == [(0, 0), (0, 0)]
