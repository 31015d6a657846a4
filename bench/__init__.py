"""Benchmarks that are not part of the app: `python -m bench.perf` times our chunkers against Chonkie and LangChain;
`python -m bench.chop` CHOP's rule backend and its OpenAI-compatible path; `python -m bench.query` one question
across six large collections; `python -m bench.scale` how each stage's cost grows with the corpus and a query's with
the collection; `python -m bench.load` drives the real app with N concurrent browser sessions."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import core.catalog  # noqa: F401  (the composition root: every chunker, method and service)


def run_cli(main: Callable[[], Any]) -> int:
    """A benchmark's `main()` as a command: a ChunkLensError (bad data folder, settings) is one line on stderr and
    exit status 2, not a traceback."""
    from core.infra.errors import ChunkLensError

    try:
        main()
    except ChunkLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def run_offline(prefix: str, run: Callable[[Any, Path], dict[str, Any]], report_text: Callable[[dict[str, Any]], str],
                args: Any) -> dict[str, Any]:
    """`run(args, folder)` with nothing fetched from the Hugging Face hub, in a throwaway folder; its figures printed
    by `report_text` and written to `args.json` when given. Returns the report."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        report = run(args, Path(tmp))
    print(report_text(report))
    write_json(args.json, report)
    return report


def write_json(path: Path | None, report: Any) -> None:
    """The report as indented JSON at `path` (nothing when no path was asked for)."""
    if path is not None:
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def write_study(path: Path | None, study: Any) -> None:
    """A study's JSON (compact indent, as the committed docs/results files are) at `path`, its folder made, with a
    `wrote` line on stderr; nothing when no path was asked for."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(study, indent=1), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
