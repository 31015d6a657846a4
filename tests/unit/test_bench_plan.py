"""`core bench` reads its flags once, at the command line, into a typed `BenchPlan`, and one entry of evaluation
runs it (`run_bench`): the argparse namespace no longer travels into the protocol, the executor, the services, the
prefetch and the bench, each of which is handed the typed part it reads."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator, Mapping

import pytest

from core.__main__ import main
from core.evaluation import plan as bench_plan
from core.evaluation.bench import BenchOptions
from core.evaluation.plan import BenchPlan, BenchSet, QuestionSample, RayCluster, run_bench
from core.infra.errors import ChunkLensError
from core.infra.keys import KeyRing
from core.ingest.datasets import load_dataset
from core.settings import Settings
from core.workbench import sample_folder


def _parts(value: object) -> Iterator[object]:
    """`value` and everything it holds: dataclass fields, mapping keys and values, sequence items."""
    yield value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _parts(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _parts(k)
            yield from _parts(v)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _parts(item)


@pytest.fixture()
def handed(monkeypatch, tmp_path):
    """Run `python -m core bench` with these flags up to the plan it hands to `run_bench` (nothing is run)."""
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    seen: list[BenchPlan] = []

    def capture(plan, progress=None, starting=None):
        seen.append(plan)
        return iter(())

    monkeypatch.setattr(bench_plan, "run_bench", capture)

    def run(*flags: str) -> BenchPlan:
        assert main(["bench", "--data", str(sample_folder()), *flags]) == 0
        return seen[-1]

    return run


def test_the_command_line_hands_a_typed_plan_and_no_flags(handed):
    plan = handed("--chunkers", "paragraph,chop:retrieval=filter", "--protocol", "chroma", "--max-docs", "3",
                  "--sample-questions", "5", "--sample-seed", "7", "--executor", "ray", "--ray-address", "auto")
    assert not any(isinstance(part, argparse.Namespace) for part in _parts(plan))
    assert list(plan.specs) == ["paragraph", "chop:retrieval=filter"]
    assert plan.options.ks == [5] and plan.options.protocol == "chroma" and plan.options.cnm_examples is None
    assert plan.options.retrieval.mode == "dense" and plan.settings.retrieval == "dense"  # the protocol's preset
    (only,) = plan.sets
    assert len(only.data.documents) == 3 and len(only.data.questions) == 5
    assert only.sample == QuestionSample(of=only.sample.of, seed=7) and only.sample.of > 5
    assert plan.ray == RayCluster("auto") and isinstance(plan.keys, KeyRing)


def test_a_plan_without_flags_runs_locally(handed):
    plan = handed("--chunkers", "paragraph")
    assert plan.ray is None and plan.sets[0].sample is None and plan.sets[0].taught is None


def _plan(tmp_path, specs: list[str], answers: int = 0, ray: RayCluster | None = None) -> BenchPlan:
    data = load_dataset(sample_folder())
    small = dataclasses.replace(data, documents=data.documents[:2],
                                questions=[q for q in data.questions
                                           if {r.doc_id for r in q.references} <= {"fan-F30", "camera-X100"}][:4])
    return BenchPlan([BenchSet(small, sample=QuestionSample(of=len(data.questions), seed=1))], specs,
                     BenchOptions([1, 3], answers=answers), Settings(workspace=str(tmp_path / "ws")),
                     KeyRing.operator(()), ray)


def test_a_bad_spec_in_a_plan_is_refused_before_any_set_starts(tmp_path):
    started: list[str] = []
    with pytest.raises(ChunkLensError, match="unknown chunker 'nonsense'"):
        next(run_bench(_plan(tmp_path, ["paragraph", "nonsense"]), starting=lambda ds: started.append(ds.name)))
    assert started == []


def test_the_plan_names_the_services_it_needs(tmp_path):
    assert _plan(tmp_path, ["paragraph"]).needs() == set()
    assert _plan(tmp_path, ["paragraph"], answers=2).needs() == {"chat"}
    assert "llm" in _plan(tmp_path, ["chop"]).needs()


def test_run_bench_yields_each_sets_report_with_its_sample(tmp_path):
    plan = _plan(tmp_path, ["paragraph"])
    started: list[str] = []
    (report,) = run_bench(plan, starting=lambda ds: started.append(ds.name))
    assert started == [plan.sets[0].data.name]
    written = report.to_json()
    assert list(written["results"]) == ["paragraph"] and written["k"] == [1, 3]
    assert written["question_sample"] == {"scored": len(plan.sets[0].data.questions),
                                          "of": plan.sets[0].sample.of, "seed": 1, "stratified_by": "document"}
    assert "executor" not in written
