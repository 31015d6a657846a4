"""The guided demo: the sample manuals as one stream, every default chunker, product-named questions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from core.chunkers.peers import PeerChunker
from core.chunkers.registry import REGISTRY
from core.evaluation.fields import shown_fields
from core.evaluation.metric_at import MetricAt, interval_text
from core.evaluation.results import BenchReport
from core.evaluation.verdicts import Gap, ahead_of, closest_gap
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.methods.chop.continuity import BoundaryScores, Decision, judge_run
from core.services import Services
from core.store.retrieval import RetrievalSettings
from core.workbench.corpus import Corpus, make_corpus, sample_folder
from core.workbench.runs import DEFAULT_SPECS, ChunkerResult, OnResult, Progress, run_chunkers
from core.workbench.scoring import benchmark

#: "your framework's default": the splitters teams deploy, at their libraries' defaults, which the guided demo offers
#: to run beside CHOP. Only when picked: the demo's own chunkers (DEFAULT_SPECS) and its report stay as they are.
FRAMEWORK_DEFAULTS = ("langchain-recursive", "llamaindex-sentence")
#: the guided demo's table: hit@1 with its interval and who is reliably ahead on it, hit@10 and wrong_doc@10
HIT_1, HIT_10, WRONG_DOC_10 = MetricAt("hit", 1), MetricAt("hit", 10), MetricAt("wrong_doc", 10)
#: one row of the guided demo's table, column by column (numbers, an interval's text, names)
DemoRow = dict[str, float | str | None]


def framework_defaults() -> list[str]:
    """The framework defaults this installation has registered, in FRAMEWORK_DEFAULTS' order."""
    return [s for s in FRAMEWORK_DEFAULTS if s in REGISTRY and issubclass(REGISTRY[s], PeerChunker)]


def demo_specs(frameworks: Sequence[str] = ()) -> list[str]:
    """The guided demo's chunkers: the default ones, then the framework defaults picked (each once). Anything else
    is refused in one line: the demo is the default chunkers, and the frameworks' defaults beside them."""
    offered = framework_defaults()
    unknown = [s for s in frameworks if s not in offered]
    if unknown:
        raise ConfigError(f"the guided demo runs the default chunkers and, beside them, a framework's default "
                          f"({', '.join(offered) or 'none installed'}), not {', '.join(unknown)}")
    return list(dict.fromkeys([*DEFAULT_SPECS, *frameworks]))


@dataclass
class DemoSummary:
    """The guided demo's story: the sample manuals as one joined stream, every default chunker, product-named
    questions, scored. `report` is a bench report (hit@k, wrong_doc@k, per-question top-1 sources)."""

    corpus: Corpus
    results: dict[str, ChunkerResult]
    report: JsonObject
    seconds: float

    @property
    def view(self) -> BenchReport:
        """The report, read by metric and field (`core.evaluation.results`)."""
        return BenchReport.of(self.report, "the guided demo's report")

    def table(self) -> list[DemoRow]:
        """One row per chunker: the headline figures, hit@1's 95 % interval, and the chunkers it is reliably
        ahead of on hit@1 (paired test over the questions, Holm-corrected)."""
        ahead = ahead_of(self.report, HIT_1)
        headline = [show for show in shown_fields() if show.headline]
        return [{"chunker": spec, HIT_1.key: HIT_1.of(r), f"{HIT_1} 95% interval": interval_text(r, HIT_1),
                 HIT_10.key: HIT_10.of(r), WRONG_DOC_10.key: WRONG_DOC_10.of(r),
                 **{show.label: r.number(show.key) for show in headline},
                 f"reliably ahead on {HIT_1} of": ", ".join(ahead.get(spec, [])) or "-"}
                for spec, r in self.view.results.items()]

    def gap(self) -> Gap | None:
        """hit@1's leader against its runner-up, and how many questions would settle a gap that size."""
        return closest_gap(self.report, HIT_1)

    def continuity(self, spec: str = "chop") -> tuple[list[Decision], BoundaryScores] | None:
        """CHOP's decisions along the stream judged against the true joins, and their scores."""
        result = self.results.get(spec)
        if result is None or not result.ok or not self.corpus.documents:
            return None
        assert result.run is not None
        judged, scores = judge_run(self.corpus.documents[0], result.run.chunks)
        return (judged, scores) if scores is not None else None


def guided_demo(services: Services, retrieval: RetrievalSettings | None = None,
                progress: Progress | None = None, frameworks: Sequence[str] = (),
                on_result: OnResult | None = None) -> DemoSummary:
    """The whole story in one call, on the bundled sample set (never the user's library): join the seven
    manuals into one stream, run the default chunkers (and `frameworks`, the framework defaults picked to run
    beside them: `demo_specs`), ask the product-named questions, score. A second run comes from the caches.
    `on_result(spec, result)` is called as each chunker is done (`run_chunkers`), before the questions are scored.
    While `python -m core warm` computes the machine's sample vectors and they are not there yet, it waits for them
    (`wait_for_warm_up`) rather than compute the same vectors beside it."""
    specs = demo_specs(frameworks)  # a bad pick is refused before anything runs
    from core.ingest.datasets import load_dataset

    started = time.perf_counter()
    wait_for_warm_up(services, progress)
    dataset = load_dataset(sample_folder())
    corpus = make_corpus(dataset.documents, dataset, join=True)
    results = run_chunkers(services, corpus, specs, progress, on_result=on_result)
    report = benchmark(services, dataset, [s for s, r in results.items() if r.ok], [1, 3, 10], True, True,
                       retrieval=retrieval, done=results)
    return DemoSummary(corpus, results, report, time.perf_counter() - started)


#: seconds between two looks at the warm-up the guided demo waits for (each one a `progress` call, where the app's
#: Stop arrives)
WAIT_STEP = 0.5
WAITING = "The sample vectors are being computed in the background; the demo runs from them when they are done"


def wait_for_warm_up(services: Services, progress: Progress | None = None) -> bool:
    """Wait while a warm-up (`python -m core warm`, which run-app.sh starts beside the server) computes the
    machine's sample vectors that `services`' embedder would copy and they are not there yet; report each look
    through `progress` (WAITING and the warm-up's own step). True when it waited. Nothing to wait for (no warm-up
    running, the file there already, the machine's file switched off) returns at once, and a warm-up that fails
    leaves the demo to compute as it would without one. Only the guided demo waits: a visitor's own documents
    are never in the file."""
    from core.store.embedders import machine_file_pending
    from core.store.warm_up import read_progress, running

    waited = False
    while (target := machine_file_pending(services.embedder)) is not None and running(target):
        waited = True
        if progress:
            step = read_progress(target)
            progress(f"{WAITING} ({step.text()})" if step else WAITING, step.done if step else 0,
                     step.total if step else 0)
        time.sleep(WAIT_STEP)
    return waited


def embed_sample_set(services: Services, specs: Sequence[str] | None = None, progress: Progress | None = None) -> None:
    """Run what a session on the sample set first asks for, so its vectors are in `services`' cache: the guided
    demo (the manuals joined, every default chunker, its questions, the reranker's sentences), then `specs` on the
    separate manuals (default: the default chunkers). `progress(stage, done, total)` counts the chunkers of both
    passes. `python -m core warm` and the test suite's warm world both start from it."""
    from core.ingest.datasets import load_dataset

    joined, alone = DEFAULT_SPECS, list(specs or DEFAULT_SPECS)
    total = len(joined) + len(alone)

    def step(where: str, before: int, then: str) -> Progress | None:
        if progress is None:
            return None
        return lambda spec, done, _n: progress(f"{spec} on {where}" if spec != "done" else then, before + done, total)

    guided_demo(services, services.settings.retrieval_settings(),
                step("the manuals joined", 0, "the demo's questions and the reranker's sentences"))
    dataset = load_dataset(sample_folder())
    run_chunkers(services, make_corpus(dataset.documents, dataset, join=False), alone,
                 step("each manual alone", len(joined), "every chunker done"))
