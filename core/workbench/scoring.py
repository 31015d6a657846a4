"""Benchmarks of runs: over a QA set, over the questions a person judged, and question sets generated for the
library."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from core.evaluation.agreement import agreement_lines
from core.evaluation.bench import BenchOptions, bench_dataset
from core.evaluation.embedder_choice import fast_setting_cost
from core.evaluation.questions import GeneratedSet, generate_questions
from core.evaluation.relevance import SourceOf, evaluate, same_document
from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject
from core.ingest.datasets import QADataset, corpus_jsonl, questions_jsonl, stratified_questions
from core.schema.documents import Document
from core.schema.questions import Question
from core.services import Services
from core.store.retrieval import RetrievalSettings
from core.workbench.queries import retriever_for
from core.workbench.runs import ChunkerResult, Progress, check_spec_count

RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "results"


def generate_library_set(services: Services, documents: Sequence[Document], n: int, design: str = "pick",
                         progress: Callable[[int, int], None] | None = None,
                         should_stop: Callable[[], bool] | None = None) -> tuple[GeneratedSet, bytes, bytes]:
    """Questions with verified evidence about the library's documents from the configured chat model
    (core.evaluation.questions), with the set's corpus.jsonl and questions.jsonl bytes. Every answer is cached:
    generating again after a stop asks only for the rest."""
    if services.chat is None:
        raise ChunkLensError("no chat model is configured (sidebar: CNM backend)")
    generated = generate_questions(list(documents), services.chat, n, design, progress=progress,
                                   should_stop=should_stop)
    generated.require_questions()
    return generated, corpus_jsonl(list(documents)), questions_jsonl(generated.questions)


def fast_embedding_cost() -> str | None:
    """What the fast embedder costs against the default, in one line from the committed embedder study (None when
    it is not there): what the sidebar's fast setting says."""
    return fast_setting_cost(RESULTS_DIR)


def generated_set_trust() -> list[str]:
    """How far generated sets ranked chunkers like hand-made ones, one line per committed agreement study."""
    return agreement_lines(RESULTS_DIR)



def benchmark(services: Services, dataset: QADataset, specs: Sequence[str], ks: Sequence[int], qualify: bool,
              join: bool, progress: Progress | None = None,
              retrieval: RetrievalSettings | None = None, answers: int = 0,
              done: Mapping[str, ChunkerResult] | None = None, max_specs: int | None = None,
              max_questions: int | None = None) -> JsonObject:
    """The same evaluation as `python -m core bench`, on the documents and questions in the app; with `answers`,
    the chat model also answers the first N questions from each chunker's top 3 (token F1, ROUGE-L). `done`: runs
    of these specs just made over the same documents, scored as they are rather than loaded again. More specs than
    `max_specs` is a ConfigError before any work. A set of more than `max_questions` questions (a shared server's
    cap) is scored on `capped_questions` of it, and the report's `question_cap` says how many of how many."""
    check_spec_count(specs, max_specs)
    options = BenchOptions(ks, qualify, join, retrieval or services.settings.retrieval_settings(), answers)
    prior = {s: r.indexed for s, r in (done or {}).items() if r.ok and r.indexed is not None}
    chosen = capped_questions(dataset.questions, max_questions)
    if len(chosen) == len(dataset.questions):
        return bench_dataset(dataset, specs, options, services, progress, prior).to_json()
    report = bench_dataset(dataclasses.replace(dataset, questions=chosen), specs, options, services, progress, prior)
    cap: JsonObject = {"scored": len(chosen), "of": len(dataset.questions), "cap": max_questions}
    return report.adding("question_cap", cap).to_json()


#: the seed of the cap's choice: the same set under the same cap is scored on the same questions every time
CAP_SEED = 0


def capped_questions(questions: Sequence[Question], cap: int | None, seed: int = CAP_SEED) -> list[Question]:
    """At most `cap` of `questions` (all of them when `cap` is None or 0), stratified by document with a seeded
    draw (`core.ingest.datasets.stratified_questions`)."""
    return stratified_questions(questions, cap, seed) if cap else list(questions)


def question_cap_line(report: Mapping[str, object]) -> str | None:
    """The one line a capped report carries: how many questions of how many were scored, and why (None when the
    whole set was)."""
    cap = report.get("question_cap")
    if not isinstance(cap, Mapping) or not all(isinstance(cap.get(k), int) for k in ("scored", "of", "cap")):
        return None
    return (f"Scored {cap['scored']:,} of the set's {cap['of']:,} questions: this shared server scores at most "
            f"{cap['cap']:,} per benchmark (setting max_bench_questions), chosen in proportion to each document's "
            "questions, the same ones every time.")


MIN_JUDGED_FOR_INTERVALS = 2


def judged_only(dataset: QADataset | None) -> QADataset | None:
    """The questions judged in the app (with at least one answering span), as a set of their own; None when
    fewer than MIN_JUDGED_FOR_INTERVALS: one question has no spread to put an interval on."""
    from core.ingest.judged import QID_PREFIX

    if dataset is None:
        return None
    mine = [q for q in dataset.questions if q.qid.startswith(QID_PREFIX) and q.references]
    return dataclasses.replace(dataset, questions=mine) if len(mine) >= MIN_JUDGED_FOR_INTERVALS else None


def judged_benchmark(services: Services, judged: QADataset, done: Mapping[str, ChunkerResult], k: int,
                     join: bool, retrieval: RetrievalSettings | None = None) -> JsonObject:
    """Every judged question against the chunk runs on show, scored as Benchmark scores them (hit and MRR at 1
    and k, with 95 % intervals and the paired tests), so the judging user sees how sure the comparison is."""
    specs = [s for s, r in done.items() if r.ok]
    return benchmark(services, judged, specs, sorted({1, k}), False, join, retrieval=retrieval, done=done)


def evaluate_result(services: Services, result: ChunkerResult, questions: Sequence[Question], ks: Sequence[int],
                    qualify: bool = False, retrieval: RetrievalSettings | None = None,
                    source_of: SourceOf = same_document) -> dict[str, float]:
    """Every question against one chunk run, scored the way the benchmark scores."""
    assert result.run is not None
    retriever = retriever_for(services, result, retrieval)
    hits = retriever.search_many([q.text(qualify) for q in questions], max(ks))
    spans = [[h.span for h in found] for found in hits]
    scores, _ = evaluate([(q.qid, q.references) for q in questions], spans, result.run.spans(), ks, source_of)
    return scores
