"""The command line's flags: the parser of every command, and the flags as the app's `Settings`."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

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
    from core.settings import CHAT_BACKENDS, CNM_BACKENDS

    # each flag's old name (the second) is still taken
    parser.add_argument("--cnm-backend", "--llm", dest="cnm_backend", choices=CNM_BACKENDS, default="extract",
                        help="what tags chop's chunks with their CNM: extract (default: learns the library, no "
                             "model), rule (a fixed lexicon, no model), local SmolLM2 through transformers or "
                             "llamacpp (in-process, JSON-constrained), or openai (an OpenAI-compatible server)")
    parser.add_argument("--chat-backend", "--chat", dest="chat_backend", choices=CHAT_BACKENDS,
                        help="what writes generated answers and questions and lumber's decisions (default: "
                             "--cnm-backend's when that is a chat model, else local)")
    parser.add_argument("--model-name", "--llm-model", dest="model_name",
                        help="the model both backends run (openai: a model name on the server; llamacpp: a .gguf; "
                             "local: a Hugging Face folder or id)")
    parser.add_argument("--model-server-url", "--llm-base-url", dest="model_server_url",
                        help="the OpenAI-compatible server of the openai backends (OpenAI, Ollama, vLLM, llama.cpp)")
    parser.add_argument("--model-timeout", "--llm-timeout", dest="model_timeout", type=float, default=60.0,
                        help="seconds per request to a model server")
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
    from core.store.choices import RERANKERS

    parser = argparse.ArgumentParser(prog="python -m core", description="ChunkLens: chunk, index, retrieve, score.")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="evaluate chunkers on qa-spans v1 folders")
    bench.add_argument("--data", action="append", required=True, metavar="DIR", help="qa-spans v1 folder (repeatable)")
    bench.add_argument("--chunkers", type=_specs, required=True, help="NAME[:key=value...][,NAME...]")
    bench.add_argument("--k", type=_ks, default=None, help="cut-offs, e.g. 1,3,5,10 (default 1,3,5,10; 5 with "
                                                          "--protocol chroma)")
    bench.add_argument("--protocol", choices=["default", "chroma"], default="default",
                       help="chroma: Chroma's chunking evaluation (dense only, no reranker, one index, 5 chunks) "
                            "with its Precision_Omega, retrieve=-1 figures and means per corpus added")
    bench.add_argument("--qualify-queries", action="store_true", help="prefix each question with its product")
    bench.add_argument("--join", action="store_true", help="join each folder's documents into one stream")
    bench.add_argument("--max-docs", type=int, metavar="N",
                       help="only each folder's first N documents and the questions about them")
    bench.add_argument("--sample-questions", type=int, metavar="N",
                       help="score N of each set's questions, drawn stratified by document (every document keeps its "
                            "share) with --sample-seed; every document stays in the store")
    bench.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the seed of --sample-questions' draw")
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
    bench.add_argument("--rerank", default=None, choices=RERANKERS,
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
                            "--chat-backend) and report token F1 and ROUGE-L; 0 (default) skips it")
    bench.add_argument("--answer-k", type=int, default=3, metavar="K", help="answer from each chunker's top K")
    bench.add_argument("--quiet", action="store_true", help="no progress bars")
    bench.add_argument("--executor", choices=["local", "ray"], default="local",
                       help="local (default): one process, as always; ray: chunk and embed on Ray's workers first "
                            "(the same figures; needs Ray: bash scripts/setup.sh --test)")
    bench.add_argument("--ray-address", default=None, metavar="ADDR",
                       help="with --executor ray: auto or ray://host:port joins a running cluster (default: a "
                            "local Ray instance started for the run and stopped at its end)")
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
                                       "(the set-up runs it, run-app.sh in the background: the guided demo then "
                                       "embeds nothing); one at a time, a second one waits for the first")
    warm.add_argument("--force", action="store_true", help="rebuild the machine's vectors even if they exist")
    warm.add_argument("--stop-with", type=int, metavar="PID",
                      help="stop, publishing nothing, when process PID ends (run-app.sh ties the warm-up it starts "
                           "in the background to the server)")
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
    # a chat model writes the questions; rule / extract are not chat models
    questions.set_defaults(cnm_backend="llamacpp")
    return parser


def quiet_libraries() -> None:
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
              "cnm_backend": args.cnm_backend,
              "model_name": args.model_name or "", "model_server_url": args.model_server_url or "",
              "model_timeout": args.model_timeout, "scorer_model": args.scorer_model or "", "eos_mode": args.eos_mode,
              "scorer_dtype": args.scorer_dtype, "scorer_engine": args.scorer_engine,
              "chroma_server": chroma, "retrieval": retrieval.mode,
              "fusion": retrieval.fusion, "lexical_weight": retrieval.lexical_weight,
              "rerank_model": getattr(args, "rerank_model", None) or ""}
    for flag in ("chat_backend", "rerank", "rerank_depth", "rerank_weight"):
        if getattr(args, flag, None) is not None:
            values[flag] = getattr(args, flag)
    if args.workspace:
        values["workspace"] = str(args.workspace)
    try:
        return Settings(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{'-'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}") from exc


