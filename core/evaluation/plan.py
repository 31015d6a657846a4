"""`core bench` as a plan and the one function that runs it.

The command line reads its flags once, at its own floor, into a `BenchPlan`: the QA sets as scored, the chunkers,
what is measured (`BenchOptions`), the settings the services are built from, the keys those services may send,
and the executor. `run_bench` runs the plan, one set after another, and yields each set's report. So the flags
never travel below the command line: every layer under it is handed the typed part it reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from core.evaluation.bench import BenchOptions, bench_dataset
from core.evaluation.prefetch import Executor, PrefetchReport, prefetch
from core.evaluation.results import BenchReport
from core.infra.jsonio import JsonObject
from core.infra.keys import KeyRing
from core.ingest.datasets import QADataset, joined
from core.pipeline import ProgressFn
from core.services import Services, build_services, needs_of
from core.settings import Settings


@dataclass(frozen=True)
class QuestionSample:
    """A set scored on a sample of its questions (`--sample-questions`): how many the whole set had, and the seed
    the sample was drawn with (one document's questions stay together)."""

    of: int
    seed: int

    def to_json(self, scored: int) -> JsonObject:
        """The report's `question_sample`."""
        return {"scored": scored, "of": self.of, "seed": self.seed, "stratified_by": "document"}


@dataclass(frozen=True)
class BenchSet:
    """One QA set as the bench scores it: its documents and questions as loaded and cut (`--doc-ids`,
    `--max-docs`, a question sample), and the hand corrections of some manuals' tags that a chunker which learns
    (CHOP) is taught from (`--cnm-examples`; None: none)."""

    data: QADataset
    taught: Mapping[str, Mapping[str, str]] | None = None
    sample: QuestionSample | None = None


@dataclass(frozen=True)
class RayCluster:
    """`--executor ray`: the heavy stages on Ray's workers, on a local instance started for the run (`address`
    None) or on the cluster at `address` (`core.evaluation.ray_executor`)."""

    address: str | None = None

    def check(self) -> None:
        """One line, before any slow work, when Ray is not installed or the address is malformed."""
        from core.evaluation.ray_executor import cluster_address, import_ray

        import_ray()
        if self.address:
            cluster_address(self.address)

    def executor(self) -> contextlib.AbstractContextManager[Executor]:
        from core.evaluation.ray_executor import ray_executor

        return ray_executor(self.address)

    def describe(self, done: PrefetchReport) -> JsonObject:
        """The report's `executor`: what the workers did, and where."""
        return {**done.to_json(), "address": self.address or "local instance"}


@dataclass(frozen=True)
class BenchPlan:
    """A bench run, every flag read and checked: what the command line hands to `run_bench`."""

    sets: Sequence[BenchSet]
    specs: Sequence[str]
    #: what is measured, the same for every set (each set's `cnm_examples` is its own `taught`)
    options: BenchOptions
    #: what the services are built from (`core.services.build_services`)
    settings: Settings
    #: which API key may go to which base URL (the command line's: the operator's, `KeyRing.operator`)
    keys: KeyRing
    #: None: the bench does everything itself
    ray: RayCluster | None = None

    def needs(self) -> set[str]:
        """The services the chunkers need, and the chat model when answers are generated (a bad spec is one line
        now, before any slow work)."""
        return needs_of(self.specs) | ({"chat"} if self.options.answers > 0 else set())


def run_bench(plan: BenchPlan, progress: ProgressFn | None = None,
              starting: Callable[[QADataset], None] | None = None) -> Iterator[BenchReport]:
    """Every set of `plan` benchmarked with its chunkers, in order, each set's report yielded as it is done.
    `starting` is told of each set before its work begins. Flags the plan holds are checked before any slow work:
    the specs, then the executor; then the services are built once for every set."""
    needs = plan.needs()
    if plan.ray is not None:
        plan.ray.check()
    services = build_services(plan.settings, plan.keys, needs=needs)
    opened: contextlib.AbstractContextManager[Executor | None] = \
        plan.ray.executor() if plan.ray is not None else contextlib.nullcontext(None)
    with opened as executor:
        for bench_set in plan.sets:
            if starting is not None:
                starting(bench_set.data)
            yield _bench_set(plan, bench_set, services, executor, progress)


def _bench_set(plan: BenchPlan, bench_set: BenchSet, services: Services, executor: Executor | None,
               progress: ProgressFn | None) -> BenchReport:
    """One set's report: on an executor, its heavy stages first go to the workers, into the caches the bench reads,
    and what they asked a model is added to the report's counts."""
    ds = bench_set.data
    options = dataclasses.replace(plan.options, cnm_examples=bench_set.taught)
    done = None
    if executor is not None:
        documents = (joined(ds) if options.join else ds).documents
        done = prefetch(documents, plan.specs, services, executor, bench_set.taught, progress)
    report = bench_dataset(ds, plan.specs, options, services, progress)
    if bench_set.sample is not None:
        report = report.adding("question_sample", bench_set.sample.to_json(len(ds.questions)))
    if done is not None and plan.ray is not None:
        report = report.with_llm_use(done.llm_use).adding("executor", plan.ray.describe(done))
    return report
