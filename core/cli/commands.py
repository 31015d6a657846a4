"""The command line's commands, one function each (`cmd_<name>`), each returning its exit status; an expected
failure raises `ChunkLensError` for `core.__main__` to print."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.flags import quiet_libraries, settings_from_flags
from core.infra.errors import ChunkLensError

if TYPE_CHECKING:  # tqdm is imported when the first bar is drawn
    from tqdm import tqdm

    from core.evaluation.plan import BenchSet
    from core.evaluation.results import BenchReport
    from core.infra.keys import KeyRing
    from core.ingest.datasets import QADataset
    from core.schema.documents import Document
    from core.services import Services
    from core.settings import Settings


class _Bars:
    """tqdm bars on stderr, one per stage, closed when the stage completes."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage[:40], file=sys.stderr, leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self.bars[stage]


def _services(settings: Settings, needs: set[str]) -> Services:
    """The services the chunkers need (`core.services.needs_of`), through the app's builder; the callers check
    flags and specs first, so they fail before any slow work."""
    from core.services import build_services

    quiet_libraries()
    return build_services(settings, _operator_keys(settings), needs=needs)


def _operator_keys(settings: Settings) -> KeyRing:
    """The command line is the operator's: its base URLs may receive the server's key (`core.infra.keys`)."""
    from core.infra.keys import KeyRing

    return KeyRing.operator([settings.embedder_base_url, settings.model_server_url, settings.rerank_model])


def _check_examples(path: Path, dataset: QADataset, examples: Mapping[str, Mapping[str, str]]) -> None:
    """Refuse, before any slow work, an examples file the run cannot use: an example whose manual `--max-docs` or
    `--doc-ids` left out (CHOP's teaching would fail once the chunkers had run), or a part longer than a CNM tag's
    part may be (`MAX_FIELD_CHARS`)."""
    from core.methods.chop.cnm import MAX_FIELD_CHARS

    kept = {d.doc_id for d in dataset.documents}
    for doc_id, parts in examples.items():
        if doc_id not in kept:
            raise ChunkLensError(f"{path}: no document '{doc_id[:80]}' among the {len(kept)} documents this run "
                                 "benchmarks (--max-docs or --doc-ids leaves it out)")
        for part, value in parts.items():
            if len(value) > MAX_FIELD_CHARS:
                raise ChunkLensError(f"{path}: the {part} of '{doc_id[:80]}' is {len(value):,} characters, over the "
                                     f"{MAX_FIELD_CHARS} a CNM tag's part may hold")


def cmd_bench(args: argparse.Namespace) -> int:
    """The flags read once into a plan (a bad one is one line, before any slow work), the plan run set by set with
    each set's table printed as it is done, and every report written to --out."""
    from core.cli.protocol import apply_protocol
    from core.evaluation.bench import BenchOptions
    from core.evaluation.plan import BenchPlan, RayCluster, run_bench

    args = apply_protocol(args)  # a protocol's preset, before the flags become settings
    settings = settings_from_flags(args)  # bad flags fail before slow work
    ray = getattr(args, "executor", "local") == "ray"
    if getattr(args, "ray_address", None) and not ray:
        raise ChunkLensError("--ray-address goes with --executor ray")
    if args.answers < 0 or args.answer_k < 1:
        raise ChunkLensError("--answers must be 0 or more and --answer-k at least 1")
    options = BenchOptions(args.k, args.qualify_queries, args.join, settings.retrieval_settings(), args.answers,
                           args.answer_k, protocol=args.protocol)
    plan = BenchPlan(_bench_sets(args), list(args.chunkers), options, settings, _operator_keys(settings),
                     RayCluster(args.ray_address) if ray else None)
    quiet_libraries()
    progress = _Bars(not args.quiet and sys.stderr.isatty() or os.environ.get("CHUNKLENS_PROGRESS") == "1")
    reports = []
    for report in run_bench(plan, progress, starting=_announce):
        reports.append(report)
        _print_report(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = reports[0].to_json() if len(reports) == 1 else [r.to_json() for r in reports]
        args.out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _bench_sets(args: argparse.Namespace) -> list[BenchSet]:
    """The --data folders as the bench scores them: gold tags attached (--gold-cnm), the manuals CHOP is taught
    from (--cnm-examples) kept out of its accuracy, then cut (--doc-ids, --max-docs) and sampled
    (--sample-questions). A bad folder or examples file is one line here, before any slow work."""
    from core.evaluation.plan import BenchSet, QuestionSample
    from core.ingest.datasets import (
        attach_gold,
        first_documents,
        load_dataset,
        read_cnm_examples,
        sample_questions,
        select_documents,
        without_gold,
    )

    sets = []
    for folder in args.data:
        ds = load_dataset(folder)
        if args.gold_cnm:
            ds = attach_gold(ds, args.gold_cnm)
        taught = read_cnm_examples(ds, args.cnm_examples) if args.cnm_examples else None
        if taught:
            ds = without_gold(ds, set(taught))
        if args.doc_ids:
            ds = select_documents(ds, args.doc_ids)
        if args.max_docs:
            ds = first_documents(ds, args.max_docs)
        sample = None
        if args.sample_questions is not None:
            sample = QuestionSample(len(ds.questions), args.sample_seed)
            ds = sample_questions(ds, args.sample_questions, args.sample_seed)
        if taught:
            _check_examples(args.cnm_examples, ds, taught)
        sets.append(BenchSet(ds, taught, sample))
    return sets


def _announce(ds: QADataset) -> None:
    print(f"{ds.name}: {len(ds.documents)} documents, {ds.n_chars:,} characters, {len(ds.questions)} questions",
          file=sys.stderr)


def _print_report(report: BenchReport) -> None:
    """One set's table on stdout and its chunkers' notes on stderr."""
    from core.evaluation.bench import format_table
    from core.schema.chunks import shown_notes

    print(format_table(report))
    print()
    for spec, result in report.results.items():
        notes = result.get("chunker_notes")
        for line in shown_notes(spec, [str(n) for n in notes] if isinstance(notes, list) else []):
            print(line, file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from core.chunkers.registry import make_chunker
    from core.outputs.export import FORMATS, records, write
    from core.pipeline import chunk_documents
    from core.schema.chunks import shown_notes
    from core.services import needs_of
    from core.workbench import folder_documents, make_corpus

    if args.out.suffix.lower() not in FORMATS:
        raise ChunkLensError(f"--out must end in .jsonl or .csv (got '{args.out.name}')")
    documents, dataset = folder_documents(args.data)  # fail on a bad folder before any slow work
    settings, needs = settings_from_flags(args), needs_of(args.chunkers)
    services = _services(settings, needs)
    corpus = make_corpus(documents, dataset, args.join)
    context = services.context()
    progress = _Bars(sys.stderr.isatty())
    made = {spec: chunk_documents(corpus.documents, make_chunker(spec, context), services.workspace.chunk_runs,
                                  progress) for spec in args.chunkers}
    for spec, run in made.items():
        for line in shown_notes(spec, run.notes()):
            print(line, file=sys.stderr)
    runs = {spec: run.chunks for spec, run in made.items()}
    recs = list(records(runs, corpus.documents))
    write(args.out, recs)
    print(f"wrote {len(recs)} chunks of {len(runs)} chunker(s) over {len(corpus.documents)} document(s) to "
          f"{args.out}", file=sys.stderr)
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from core.evaluation.report import load_reports, markdown_table, render_results

    if args.results:
        text = render_results(args.results)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            print(text, end="")
        return 0
    if args.report is None:
        raise ChunkLensError("table needs a report file, or --results DIR")
    for report in load_reports(args.report):
        print(markdown_table(report, args.metrics, args.k))
        print()
    return 0


def _question_documents(paths: list[Path]) -> list[Document]:
    """The documents behind --data: each folder's (a qa-spans corpus, or its PDF / DOCX / TXT / Markdown files) and
    each file's, doc ids made unique in the order given."""
    from core.infra.errors import GenerationError
    from core.ingest.documents import load_file
    from core.workbench import folder_documents

    docs = []
    for path in paths:
        if path.is_dir():
            docs.extend(folder_documents(path)[0])
        elif path.is_file():
            docs.append(load_file(path))
        else:
            raise ChunkLensError(f"{path}: no such file or folder")
    seen: set[str] = set()
    for n, doc in enumerate(docs, start=1):
        if doc.doc_id in seen:
            doc.doc_id = f"{doc.doc_id}-{n}"
        seen.add(doc.doc_id)
    if not any(d.text.strip() for d in docs):
        raise GenerationError("no documents with text in --data")
    return docs


def cmd_questions(args: argparse.Namespace) -> int:
    from core.evaluation.questions import check_out_folder, generate_questions, write_set
    from core.infra.errors import GenerationError

    if args.n < 1:
        raise GenerationError("--n must be at least 1")
    check_out_folder(args.out)  # before any slow work
    documents = _question_documents(args.data)
    settings = settings_from_flags(args)
    chat = _services(settings, {"chat"}).chat
    assert chat is not None  # asked for by name, so built
    print(f"{len(documents)} document(s); asking {chat.label} for {args.n} question(s) ({args.design})",
          file=sys.stderr)
    bars = _Bars(sys.stderr.isatty() or os.environ.get("CHUNKLENS_PROGRESS") == "1")
    generated = generate_questions(documents, chat, args.n, design=args.design, seed=args.seed,
                                   progress=lambda done, total: bars("questions", done, total))
    generated.require_questions()
    write_set(args.out, documents, generated)
    print(f"wrote {len(generated.questions)} question(s) to {args.out} ({generated.attempts} answers judged; "
          f"rejected: {generated.rejections()}; model calls {generated.calls}, from the cache {generated.cached})",
          file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from core.evaluation.report import load_reports
    from core.outputs.report_html import render_html

    if not args.report.is_file():
        raise ChunkLensError(f"{args.report}: no such file")
    reports = load_reports(args.report)  # each checked, an error naming the report of a list
    text = render_html(reports if len(reports) > 1 else reports[0], args.title, args.generated)
    out = args.out or args.report.with_suffix(".html")
    if out.resolve() == args.report.resolve():
        raise ChunkLensError(f"--out {out} would overwrite the report")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ChunkLensError(f"cannot write {out}: {exc.strerror or exc}") from exc
    print(f"wrote {out} ({len(text.encode('utf-8')) / 1e6:.1f} MB)", file=sys.stderr)
    return 0


def cmd_chunkers() -> int:
    import dataclasses

    from core.chunkers.registry import REGISTRY, available

    for name in available():
        cls = REGISTRY[name]
        params = ", ".join(f"{f.name}={f.default}" for f in dataclasses.fields(cls))
        print(f"{name:12s} {params}")
    return 0


def cmd_warm(args: argparse.Namespace) -> int:
    """The sample set's vectors under the default settings, computed once in a scratch workspace and written where
    every workspace on the machine reads them (`machine_vectors_path`): the guided demo (the seven manuals joined,
    every default chunker, its questions, the reranker's sentences) and the default chunkers on the separate
    manuals. A new workspace, a shared server's new visitor included, then embeds none of them again. A file that is
    there already is read whole first (`file_problem`): one that is sound is left, a damaged one (or one another
    model made) is rebuilt.

    One warm-up at a time per machine file (`core.store.warm_up`): a second one waits for the first, then finds the
    file it made and computes nothing (nor does `--force` then rebuild what was just built). While it computes, it
    writes how far it is beside the file, where the guided demo reads it while it waits. With `--stop-with PID` it
    stops, publishing nothing, when that process ends (run-app.sh passes the server's)."""
    if args.stop_with is None:
        return _warm(args)
    from core.cli.stop_with import stop_with, stopping

    stop_with(args.stop_with, "the warm-up stops (nothing published; the next one starts again)")
    try:
        return _warm(args)
    except BaseException:
        if stopping.is_set():  # what the stop interrupted failed its own way (an import: ImportError); it said why
            return 128 + signal.SIGTERM
        raise


def _warm(args: argparse.Namespace) -> int:
    import tempfile
    import time

    from core.services import build_services
    from core.settings import Settings
    from core.store.embedders import machine_vectors_path, model_files, publish_machine_vectors
    from core.store.embeddings import CachedEmbedder
    from core.store.machine_file import file_problem
    from core.store.warm_up import WarmProgress, WarmUpLock
    from core.workbench import embed_sample_set

    def waiting(progress: WarmProgress | None) -> None:
        under_way = f" ({progress.text()})" if progress else ""
        print(f"another `python -m core warm` is computing the machine's sample vectors{under_way}; waiting for it",
              file=sys.stderr, flush=True)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chunklens-warm-") as scratch:
        services = build_services(Settings(workspace=scratch))
        cached = services.embedder
        assert isinstance(cached, CachedEmbedder), "build_services puts the vector cache around every embedder"
        cached.machine = None  # compute every vector afresh, whatever an older file holds
        model = cached.inner
        target = machine_vectors_path(model.key)
        with WarmUpLock(target).acquire(waiting) as lock:
            if target.exists() and (lock.waited or not args.force):
                problem = file_problem(target, model, model_files(model), full=True)
                if problem is None:
                    made = "the other warm-up made them" if lock.waited else "--force rebuilds them"
                    print(f"the machine's sample vectors are in {target} ({made})", file=sys.stderr)
                    return 0
                print(f"{target}: {problem}; rebuilding it", file=sys.stderr)
            print(f"computing the machine's sample vectors into {target}", file=sys.stderr, flush=True)
            embed_sample_set(services, progress=lock.report)
            computed = cached.stats.computed
            lock.report("checking and publishing the file", 1, 1)
            publish_machine_vectors(services.workspace.cache / "embeddings.sqlite", model)
    print(f"{computed:,} sample-set vectors in {target} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


