"""The guided demo offers "your framework's default" (LangChain's recursive splitter, LlamaIndex's sentence splitter,
whichever are registered) beside CHOP, run only when picked: the demo's own chunkers and its report stay the same."""

from __future__ import annotations

import json

import pytest

from core.chunkers.peers import PeerChunker
from core.chunkers.registry import REGISTRY
from core.infra.errors import ConfigError
from core.workbench import DEFAULT_SPECS, demo
from core.workbench.demo import FRAMEWORK_DEFAULTS, demo_specs, framework_defaults
from tests.support.data import ROOT


def test_the_framework_defaults_offered_are_registered_peers_outside_the_demos_own_chunkers():
    offered = framework_defaults()
    assert "langchain-recursive" in offered
    assert offered == [s for s in FRAMEWORK_DEFAULTS if s in REGISTRY]
    assert all(issubclass(REGISTRY[s], PeerChunker) and s not in DEFAULT_SPECS for s in offered)


def test_the_demo_runs_its_own_chunkers_and_the_picked_frameworks_beside_them():
    assert demo_specs() == DEFAULT_SPECS
    assert demo_specs(["langchain-recursive", "langchain-recursive"]) == [*DEFAULT_SPECS, "langchain-recursive"]
    with pytest.raises(ConfigError, match=r"^the guided demo runs .* not recursive:theta=50$"):
        demo_specs(["recursive:theta=50"])


def test_the_committed_demo_report_is_the_demos_own_chunkers():
    report = json.loads((ROOT / "docs" / "results" / "demo_reranked.json").read_text(encoding="utf-8"))
    assert list(report["results"]) == DEFAULT_SPECS


def test_guided_demo_chunks_and_scores_the_picked_framework(monkeypatch):
    seen: dict[str, list[str]] = {}

    class Ran:
        ok = True

    def run_chunkers(services, corpus, specs, progress=None, on_result=None):
        seen["chunked"] = list(specs)
        return {s: Ran() for s in specs}

    def benchmark(services, dataset, specs, *args, **kwargs):
        seen["scored"] = list(specs)
        return {"results": {}}

    monkeypatch.setattr(demo, "run_chunkers", run_chunkers)
    monkeypatch.setattr(demo, "benchmark", benchmark)
    monkeypatch.setattr(demo, "wait_for_warm_up", lambda services, progress=None: False)  # no services to wait for
    demo.guided_demo(None, frameworks=["langchain-recursive"])  # type: ignore[arg-type]
    assert seen["chunked"] == seen["scored"] == [*DEFAULT_SPECS, "langchain-recursive"]
    with pytest.raises(ConfigError):
        demo.guided_demo(None, frameworks=["chop:retrieval=boost"])  # type: ignore[arg-type]
