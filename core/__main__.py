"""Command line: `python -m core bench ...`, `python -m core table REPORT.json`, `python -m core export ...`,
`python -m core questions ...` (a generated qa-spans set), `python -m core report REPORT.json` (a self-contained
HTML file), `python -m core chunkers` and `python -m core warm` (the sample set's vectors, once per machine).

Every expected failure (bad folder, bad file, unknown chunker, unreachable server) ends with one line on
stderr and exit status 2; progress goes to stderr so stdout holds only the results table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import core.catalog  # noqa: F401  (the composition root: every chunker, method and service)
from core.infra.errors import ChunkLensError

EXIT_USAGE = 2


def _ks(text: str) -> list[int]:
    from core.settings import parse_ks

    try:
        return parse_ks(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--k takes integers >= 1 like 1,3,5 (got '{text}')") from exc


def _specs(text: str) -> list[str]:
    specs = [s.strip() for s in text.split(",") if s.strip()]
    if not specs:
        raise argparse.ArgumentTypeError("--chunkers needs at least one name")
    return specs


def _service_flags(parser: argparse.ArgumentParser) -> None:
    """The flags naming the services chunkers use (shared by bench and export)."""
    from core.methods.lgmgc.scoring import DTYPES, EOS_MODES, SCORER_ENGINES

    parser.add_argument("--workspace", type=Path,
                        help="workspace folder (default $CHUNKLENS_WORKSPACE or ~/.chunklens)")
    parser.add_argument("--embedder", default=None,
                       help="bundled:minilm-fp32 (default: all-MiniLM-L6-v2 in fp32 on onnxruntime), "
                            "bundled:minilm-int8 (the same model computing in int8: about half the time), "
                            "bundled:all-MiniLM-L6-v2 (fp32 on torch), a folder, an HF id, openai:<model>")
    parser.add_argument("--embedder-base-url", default=None,
                       help="base URL of an OpenAI-compatible embedding server for --embedder openai:<model> "
                            "(vLLM, Ollama, llama.cpp, TEI); default api.openai.com")
    parser.add_argument("--long-text", choices=["truncate", "window"], default="truncate",
                       help="texts longer than the embedder reads: truncate, or window and mean-pool")
    parser.add_argument("--llm", choices=["rule", "extract", "local", "llamacpp", "openai"], default="extract",
                       help="CNM backend for chop: extract (default: learns the library, no model), rule-based (a "
                            "fixed lexicon, no model), local SmolLM2 through transformers "
                            "or llama.cpp (in-process, JSON-constrained), or OpenAI-compatible")
    parser.add_argument("--llm-model", help="chat model (openai: a model name; local: a Hugging Face folder)")
    parser.add_argument("--llm-base-url", help="OpenAI-compatible base URL (OpenAI, Ollama, vLLM, llama.cpp)")
    parser.add_argument("--llm-timeout", type=float, default=60.0, help="seconds per LLM request")
    parser.add_argument("--scorer-model", default=None,
                       help="causal LM for lg/lgmgc: the bundled SmolLM2 (default), a local folder or an HF id")
    parser.add_argument("--eos-mode", choices=EOS_MODES, default="eos",
                       help="which next tokens count as end of text for lg/lgmgc")
    parser.add_argument("--scorer-dtype", choices=DTYPES, default="float32",
                       help="lg/lgmgc scorer precision (bfloat16: faster on CPUs with AVX-512 BF16)")
    parser.add_argument("--scorer-engine", choices=SCORER_ENGINES, default="transformers",
                       help="what runs the lg/lgmgc scorer: transformers (torch) or llamacpp (the GGUF in-process; "
                            "--scorer-model is then a .gguf file)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ChunkLens: chunk, index, retrieve, score.")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="evaluate chunkers on qa-spans v1 folders")
    bench.add_argument("--data", action="append", required=True, metavar="DIR", help="qa-spans v1 folder (repeatable)")
    bench.add_argument("--chunkers", type=_specs, required=True, help="NAME[:key=value...][,NAME...]")
    bench.add_argument("--k", type=_ks, default=[1, 3, 5, 10], help="cut-offs, e.g. 1,3,5,10")
    bench.add_argument("--qualify-queries", action="store_true", help="prefix each question with its product")
    bench.add_argument("--join", action="store_true", help="join each folder's documents into one stream")
    bench.add_argument("--max-docs", type=int, metavar="N",
                       help="only each folder's first N documents and the questions about them")
    bench.add_argument("--doc-ids", type=lambda v: [x for x in v.split(",") if x], metavar="ID[,ID...]",
                       help="only these documents and the questions about them")
    bench.add_argument("--gold-cnm", type=Path, metavar="FILE",
                       help="gold CNM tags per document (e.g. docs/gold/emanual_galaxy.json), to score CHOP's tags")
    bench.add_argument("--cnm-examples", type=Path, metavar="FILE",
                       help="hand-corrected CNM tags of some manuals ({doc_id: {\"category\": ..., \"model\": ...}}): "
                            "chop carries them to the other manuals, and tags are scored on those others only")
    bench.add_argument("--out", type=Path, help="write the JSON report here")
    _service_flags(bench)
    bench.add_argument("--chroma", metavar="HOST:PORT", help="use a Chroma server instead of the embedded store")
    bench.add_argument("--retrieval", default=None, metavar="dense|bm25|hybrid",
                       help="how every chunker is searched (default: hybrid): MiniLM cosine, BM25 over the same "
                            "embedded text, or both fused")
    bench.add_argument("--fusion", default=None, metavar="rrf|weighted",
                       help="hybrid: reciprocal-rank fusion (default) or a weighted sum of min-max scores")
    bench.add_argument("--lexical-weight", default=None, metavar="W",
                       help="hybrid: the lexical side's weight, 0 to 1 (default 0.9, see docs/RETRIEVAL.md)")
    bench.add_argument("--rerank", default=None, choices=["none", "maxsim", "model"],
                       help="re-order each search's top hits: maxsim (each chunk's best sentence, with the embedder) "
                            "or model (--rerank-model); default: the app's")
    bench.add_argument("--rerank-depth", type=int, default=None, metavar="N",
                       help="how many first-stage hits the reranker re-orders (default 20)")
    bench.add_argument("--rerank-weight", type=float, default=None, metavar="W",
                       help="the reranker's weight against the first-stage rank, 0 to 1 (default: maxsim's "
                            "measured weight, a model's 1)")
    bench.add_argument("--rerank-model", default=None, metavar="FOLDER|URL",
                       help="for --rerank model: a sentence-transformers CrossEncoder folder or a /rerank server URL")
    bench.add_argument("--answers", type=int, default=0, metavar="N",
                       help="generate answers for the first N questions with a reference answer (the chat model: "
                            "--llm openai/local) and report token F1 and ROUGE-L; 0 (default) skips it")
    bench.add_argument("--answer-k", type=int, default=3, metavar="K", help="answer from each chunker's top K")
    bench.add_argument("--quiet", action="store_true", help="no progress bars")
    table = sub.add_parser("table", help="print a bench JSON report as a Markdown table")
    table.add_argument("report", type=Path, nargs="?", help="a file written by bench --out")
    table.add_argument("--results", type=Path, metavar="DIR",
                       help="render every section of DIR/index.json (docs/results) instead of one report")
    table.add_argument("--out", type=Path, help="with --results: write the Markdown here (e.g. docs/RESULTS.md)")
    table.add_argument("--metrics", default="hit,mrr,ndcg", type=lambda v: [m for m in v.split(",") if m],
                       help="metric names, e.g. dcg,recall or span_recall,span_iou")
    table.add_argument("--k", type=_ks, default=None, help="cut-offs to show (default: all in the report)")
    report = sub.add_parser("report", help="write a bench JSON report as one self-contained HTML file")
    report.add_argument("report", type=Path, help="a file written by bench --out")
    report.add_argument("--out", type=Path, help="the HTML file to write (default: the report's name with .html)")
    report.add_argument("--title", help="the page's title (default: 'ChunkLens comparison: <dataset>')")
    report.add_argument("--generated", metavar="TEXT",
                        help="a date or note shown as 'generated TEXT' (nothing by default, so the file is the "
                             "same for the same report)")
    export = sub.add_parser("export", help="write every chunker's chunks as JSONL or CSV")
    export.add_argument("--data", required=True, type=Path, metavar="DIR",
                        help="a qa-spans v1 folder, or a folder of PDF / DOCX / TXT / Markdown files")
    export.add_argument("--chunkers", type=_specs, required=True, help="NAME[:key=value...][,NAME...]")
    export.add_argument("--join", action="store_true", help="join the documents into one stream first")
    export.add_argument("--out", type=Path, required=True, help="FILE.jsonl or FILE.csv")
    _service_flags(export)
    sub.add_parser("chunkers", help="list the chunkers and their parameters")
    warm = sub.add_parser("warm", help="compute the sample set's vectors once for every workspace on this machine "
                                       "(the set-up runs it: the guided demo then embeds nothing)")
    warm.add_argument("--force", action="store_true", help="rebuild the machine's vectors even if they exist")
    questions = sub.add_parser("questions", help="generate questions with verified evidence spans for any documents "
                                                 "(a qa-spans v1 set)")
    questions.add_argument("--data", nargs="+", required=True, type=Path, metavar="DIR|FILE",
                           help="a qa-spans v1 folder (its corpus), a folder of PDF / DOCX / TXT / Markdown files, or "
                                "such files")
    questions.add_argument("--n", type=int, required=True, help="how many questions to keep")
    questions.add_argument("--out", type=Path, required=True, help="a new (or empty) folder for the set")
    questions.add_argument("--design", choices=["pick", "quote"], default="pick",
                           help="pick (default): the program picks the evidence, the model writes the question; "
                                "quote: the model writes the question and quotes its evidence")
    questions.add_argument("--seed", type=int, default=0, help="which passages are drawn")
    _service_flags(questions)
    questions.set_defaults(llm="llamacpp")  # a chat model writes the questions; rule / extract are not chat models
    return parser


class _Bars:
    """tqdm bars on stderr, one per stage, closed when the stage completes."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, object] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage[:40], file=sys.stderr, leave=False)
        bar.update(done - bar.n)  # type: ignore[attr-defined]
        if done >= total:
            bar.close()  # type: ignore[attr-defined]
            del self.bars[stage]


def _quiet_libraries() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def settings_from_flags(args: argparse.Namespace):
    """The command line's flags as `Settings`, the app's defaults where a flag is not given; a bad value is one
    ConfigError line. Bench and export build their services from it, as the app does from its settings."""
    from pydantic import ValidationError

    from core.infra.errors import ConfigError
    from core.settings import Settings, parse_host_port, retrieval_from_flags
    retrieval = retrieval_from_flags(getattr(args, "retrieval", None), getattr(args, "fusion", None),
                                     getattr(args, "lexical_weight", None))
    chroma = getattr(args, "chroma", None) or ""
    if chroma and parse_host_port(chroma) is None:
        raise ChunkLensError(f"--chroma wants HOST:PORT, got '{chroma}'")
    values = {"embedder": args.embedder or Settings.model_fields["embedder"].default,
              "embedder_base_url": getattr(args, "embedder_base_url", None) or "", "long_text": args.long_text,
              "llm": args.llm,
              "llm_model": args.llm_model or "", "llm_base_url": args.llm_base_url or "",
              "llm_timeout": args.llm_timeout, "scorer_model": args.scorer_model or "", "eos_mode": args.eos_mode,
              "scorer_dtype": args.scorer_dtype, "scorer_engine": args.scorer_engine,
              "chroma_server": chroma, "retrieval": retrieval.mode,
              "fusion": retrieval.fusion, "lexical_weight": retrieval.lexical_weight,
              "rerank_model": getattr(args, "rerank_model", None) or ""}
    for flag in ("rerank", "rerank_depth", "rerank_weight"):
        if getattr(args, flag, None) is not None:
            values[flag] = getattr(args, flag)
    if args.workspace:
        values["workspace"] = str(args.workspace)
    try:
        return Settings(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{'-'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}") from exc


def _services(settings, needs: set[str]):
    """The services the chunkers need (`core.services.needs_of`), through the app's builder; the callers check
    flags and specs first, so they fail before any slow work."""
    from core.infra.keys import KeyRing
    from core.services import build_services

    _quiet_libraries()
    # the command line is the operator's: its base URLs may receive the server's key (core.infra.keys)
    keys = KeyRing.operator([settings.embedder_base_url, settings.llm_base_url, settings.rerank_model])
    return build_services(settings, keys, needs=needs)


def cmd_bench(args: argparse.Namespace) -> int:
    from core.evaluation.bench import BenchOptions, bench_dataset, format_table
    from core.ingest.datasets import (
        attach_gold,
        first_documents,
        load_dataset,
        read_cnm_examples,
        select_documents,
        without_gold,
    )
    from core.services import needs_of

    settings = settings_from_flags(args)  # bad flags fail before slow work
    datasets = [load_dataset(d) for d in args.data]  # fail on a bad folder before any slow work
    if args.gold_cnm:
        datasets = [attach_gold(d, args.gold_cnm) for d in datasets]
    examples = [read_cnm_examples(d, args.cnm_examples) if args.cnm_examples else None for d in datasets]
    datasets = [without_gold(d, set(e)) if e else d for d, e in zip(datasets, examples)]
    if args.doc_ids:
        datasets = [select_documents(d, args.doc_ids) for d in datasets]
    if args.max_docs:
        datasets = [first_documents(d, args.max_docs) for d in datasets]
    needs = needs_of(args.chunkers)  # unknown names and bad parameters fail now, too
    if args.answers < 0 or args.answer_k < 1:
        raise ChunkLensError("--answers must be 0 or more and --answer-k at least 1")
    services = _services(settings, needs | ({"chat"} if args.answers > 0 else set()))
    progress = _Bars(not args.quiet and sys.stderr.isatty() or os.environ.get("CHUNKLENS_PROGRESS") == "1")
    reports = []
    for ds, taught in zip(datasets, examples):
        print(f"{ds.name}: {len(ds.documents)} documents, {ds.n_chars:,} characters, {len(ds.questions)} questions",
              file=sys.stderr)
        options = BenchOptions(args.k, args.qualify_queries, args.join, services.settings.retrieval_settings(),
                               args.answers, args.answer_k, cnm_examples=taught)
        report = bench_dataset(ds, args.chunkers, options, services, progress)
        reports.append(report)
        print(format_table(report))
        print()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = reports[0] if len(reports) == 1 else reports
        args.out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from core.chunkers.registry import make_chunker
    from core.outputs.export import FORMATS, records, write
    from core.pipeline import chunk_documents
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
    runs = {spec: chunk_documents(corpus.documents, make_chunker(spec, context), services.workspace.chunk_runs,
                                  progress).chunks for spec in args.chunkers}
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


def _question_documents(paths: list[Path]):
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
    from core.outputs.report_summary import check_report

    if not args.report.is_file():
        raise ChunkLensError(f"{args.report}: no such file")
    reports = load_reports(args.report)
    for i, report in enumerate(reports):
        check_report(report, str(args.report) if len(reports) == 1 else f"{args.report} (report {i + 1})")
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
    manuals. A new workspace, a shared server's new visitor included, then embeds none of them again."""
    import tempfile
    import time

    from core.services import build_services
    from core.settings import Settings
    from core.store.embedders import MACHINE_VECTORS_ENV, machine_vectors_path, publish_machine_vectors
    from core.store.embeddings import BUNDLED_MINILM_FP32
    from core.store.onnx_embedder import OnnxMiniLMEmbedder
    from core.workbench import embed_sample_set

    started = time.perf_counter()
    defaults = Settings()
    if defaults.embedder == BUNDLED_MINILM_FP32:  # the usual case, answered without loading the model
        target = machine_vectors_path(OnnxMiniLMEmbedder.key_for("fp32", defaults.long_text))
        if target.exists() and not args.force:
            print(f"the machine's sample vectors are in {target} (--force rebuilds them)", file=sys.stderr)
            return 0
    with tempfile.TemporaryDirectory(prefix="chunklens-warm-") as scratch:
        before = os.environ.get(MACHINE_VECTORS_ENV)
        os.environ[MACHINE_VECTORS_ENV] = "off"  # compute every vector afresh, whatever an older file holds
        try:
            services = build_services(Settings(workspace=scratch))
            target = machine_vectors_path(services.embedder.key)
            if target.exists() and not args.force:
                print(f"the machine's sample vectors are in {target} (--force rebuilds them)", file=sys.stderr)
                return 0
            embed_sample_set(services)
            computed = services.embedder.stats.computed
            source = services.workspace.cache / "embeddings.sqlite"
        finally:
            if before is None:
                os.environ.pop(MACHINE_VECTORS_ENV, None)
            else:
                os.environ[MACHINE_VECTORS_ENV] = before
        publish_machine_vectors(source, services.embedder.key)
    print(f"{computed:,} sample-set vectors in {target} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "bench":
            return cmd_bench(args)
        if args.command == "table":
            return cmd_table(args)
        if args.command == "export":
            return cmd_export(args)
        if args.command == "questions":
            return cmd_questions(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "warm":
            return cmd_warm(args)
        return cmd_chunkers()
    except ChunkLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
