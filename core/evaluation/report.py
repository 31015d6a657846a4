"""Markdown tables from `python -m core bench` JSON files, so README figures are regenerated, not retyped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import ChunkLensError

EXTRAS = {
    "wall s": lambda r: sum(r["seconds"].values()),
    "passes/1k words": lambda r: r.get("forward_passes_per_1k_words"),
    "llm calls": lambda r: r.get("llm_calls") or None,
    "boundary F1": lambda r: r.get("boundary_f1"),
    "answer F1": lambda r: r.get("answer_f1"),
    "answer ROUGE-L": lambda r: r.get("answer_rouge_l"),
    "answer calls": lambda r: r.get("answer_calls") if "answer_f1" in r else None,
    "answer tokens in / out": lambda r: (f"{r['answer_tokens_in']:,} / {r['answer_tokens_out']:,}"
                                         if "answer_tokens_in" in r else None),
    "answer s": lambda r: r.get("answer_seconds"),
}


def load_reports(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ChunkLensError(f"{path}: not a bench report ({exc})") from exc
    reports = data if isinstance(data, list) else [data]
    if not all(isinstance(r, dict) and "results" in r and "k" in r for r in reports):
        raise ChunkLensError(f"{path}: not a bench report (no 'results')")
    return reports


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def _extra(name: str, result: dict[str, Any]) -> str:
    value = EXTRAS[name](result)
    return f"{value:.1f}" if name in ("wall s", "answer s") and value is not None else _cell(value)


def markdown_table(report: dict[str, Any], metrics: Sequence[str], ks: Sequence[int] | None = None) -> str:
    """One row per chunker: parents, children, mean parent tokens, each metric@k, then cost columns that
    carry information in this report (wall seconds always)."""
    ks = list(ks or report["k"])
    missing = [f"{m}@{k}" for m in metrics for k in ks if f"{m}@{k}" not in next(iter(report["results"].values()))]
    if missing:
        raise ChunkLensError(f"the report has no {', '.join(missing)}")
    results = report["results"]
    extras = [name for name, get in EXTRAS.items() if any(get(r) is not None for r in results.values())]
    header = ["chunker", "chunks", "children", "tokens", *[f"{m}@{k}" for m in metrics for k in ks], *extras]
    lines = [f"{report['dataset']}: {report['n_questions']} questions, {report['n_documents']} documents, "
             f"embedder {report['embedder']}", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for name, r in results.items():
        row = [f"`{name}`", str(r["n_chunks"]), str(r.get("n_children") or "-"), f"{r['mean_chunk_tokens']:.0f}",
               *[_cell(r[f"{m}@{k}"]) for m in metrics for k in ks], *[_extra(e, r) for e in extras]]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
