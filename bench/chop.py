"""CHOP's cost outside the model: the rule backend's throughput, and how close the OpenAI-compatible path comes
to the wall time its calls alone must take.

    python -m bench.chop [--data DIR] [--delay 0.2] [--concurrency 1,4,8] [--windows N] [--json OUT]

- Rule backend: CHOP (tokenise, 500/100 windows, rule CNMs and continuity decisions) over the folder's documents
  joined into one stream; windows per second, medians of 3 runs.
- OpenAI-compatible path: the same chunker, first `--windows` windows, against a real HTTP server on loopback
  (bench/fault_server.py, a separate process) that answers every call after exactly `--delay` seconds, so the
  model's own time is known and fixed. CHOP makes n-1 continuity calls, then one CNM call per segment start
  (the server always answers "same", so one); at concurrency c the calls alone take
  ceil((n-1)/c) * delay + delay. The rest is ours: HTTP client, prompts, parsing, the answer cache (a fresh one
  per run, so every call is made).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import run_cli, write_json

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "emanual_galaxy"


def joined_document(folder: Path) -> Any:
    from core.ingest.datasets import load_dataset
    from core.ingest.documents import join_documents

    return join_documents(load_dataset(folder).documents)


def rule_throughput(doc: Any, repeat: int) -> dict[str, Any]:
    """Windows per second of `chop` with the rule backend (no model, no embedder)."""
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.methods.chop.rules import RuleCnm

    chunker = make_chunker("chop", ChunkerContext(llm=RuleCnm()))
    runs, count = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        count = len(chunker.chunk(doc).chunks)
        runs.append(time.perf_counter() - t0)
    seconds = statistics.median(runs)
    return {"chars": len(doc.text), "windows": count, "seconds": round(seconds, 4),
            "windows_per_s": round(count / seconds, 1), "runs": [round(r, 4) for r in runs]}


def openai_path(doc: Any, windows: int, delay: float, concurrency: int, server_url: str) -> dict[str, Any]:
    """One CHOP run over the first `windows` windows through the real OpenAI client, with a fresh answer cache."""
    from core.chunkers.base import ChunkerContext, token_window_chunks
    from core.chunkers.registry import make_chunker
    from core.methods.chop.backends import make_cnm_backend
    from core.methods.chop.chunker import ChopChunker
    from core.schema.documents import Document

    first = token_window_chunks(doc, ChopChunker.size, ChopChunker.overlap)[:windows]
    piece = Document("bench", "bench", doc.text[: first[-1].end])
    with tempfile.TemporaryDirectory() as cache_dir:
        backend = make_cnm_backend("openai", Path(cache_dir), model="bench", base_url=server_url,
                                   max_concurrency=concurrency, max_retries=0)
        chunker = make_chunker("chop", ChunkerContext(llm=backend))
        t0 = time.perf_counter()
        chunking = chunker.chunk(piece)
        seconds = time.perf_counter() - t0
        stats = backend.stats.to_dict()
    n = len(chunking.chunks)
    segments = chunking.trace["cnm_calls"]
    assert isinstance(segments, int)  # the chop chunker's trace counts its CNM calls
    ideal = (math.ceil((n - 1) / concurrency) + math.ceil(segments / concurrency)) * delay
    return {"concurrency": concurrency, "windows": n, "calls": int(stats["calls"]), "errors": int(stats["errors"]),
            "seconds": round(seconds, 3), "ideal_seconds": round(ideal, 3),
            "x_ideal": round(seconds / ideal, 3) if ideal else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per call")
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--windows", type=int, default=60, help="windows sent through the OpenAI path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)

    from bench.local_servers import FaultServer

    doc = joined_document(args.data)
    report: dict[str, Any] = {"data": str(args.data), "rule": rule_throughput(doc, args.repeat), "openai": []}
    r = report["rule"]
    print(f"rule backend: {r['windows']} windows of {r['chars']:,} chars in {r['seconds']:.3f} s = "
          f"{r['windows_per_s']:,.0f} windows/s (target > 200)")
    server = FaultServer(delay=args.delay).start()
    try:
        print(f"OpenAI-compatible path, server answering in {args.delay:g} s per call:")
        print("  concurrency  windows  calls  errors  wall s  ideal s  x ideal")
        for c in (int(x) for x in args.concurrency.split(",")):
            row = openai_path(doc, args.windows, args.delay, c, server.base_url)
            report["openai"].append(row)
            print(f"  {c:>11}  {row['windows']:>7}  {row['calls']:>5}  {row['errors']:>6}  {row['seconds']:>6.2f}  "
                  f"{row['ideal_seconds']:>7.2f}  {row['x_ideal']:>7.3f}")
    finally:
        server.kill()
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
