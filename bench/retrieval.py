"""Retrieval modes across the shared sets: dense, BM25 and hybrid (RRF and weighted, several lexical weights).

    python -m bench.retrieval [--sets emanual_q,emanual,chroma_eval,covid_qa] [--chunkers naive-500t,recursive,chop]
                              [--weights 0.3,0.5,0.7] [--k 1,3,5,10] [--long-text truncate] [--out REPORT.json]

Every setting goes through `core.bench.bench_dataset`, the evaluation `python -m core bench` runs, on the same
chunk runs, vectors and collections (all cached in the workspace, so only the first setting chunks and embeds).
The lexical weight's default is chosen here, over every set at once: for each fusion the weight with the best
mean MRR@10 over all (set, chunker) pairs, so no single set tunes it. The report keeps every bench report and
prints one table per set plus the choice.

Sets: `emanual_q` is emanual_galaxy with product-named questions (`--qualify-queries`), `emanual` the same with
plain questions; `chroma_eval`, `covid_qa` as they are. They are read from ../shared/data (or --shared).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

SETS = {"emanual_q": ("emanual_galaxy", True), "emanual": ("emanual_galaxy", False),
        "chroma_eval": ("chroma_eval", False), "covid_qa": ("covid_qa", False)}
SHOWN = ("hit@1", "hit@10", "mrr@10", "span_recall@5", "wrong_doc@10")


def settings_grid(weights: list[float]) -> list[tuple[str, dict[str, Any]]]:
    grid: list[tuple[str, dict[str, Any]]] = [("dense", {"mode": "dense"}), ("bm25", {"mode": "bm25"})]
    for fusion in ("rrf", "weighted"):
        for w in weights:
            grid.append((f"hybrid-{fusion}-{w:g}", {"mode": "hybrid", "fusion": fusion, "lexical_weight": w}))
    return grid


def choose_weights(reports: dict[str, dict[str, dict[str, Any]]], metric: str = "mrr@10") -> dict[str, Any]:
    """Per fusion, the lexical weight with the best mean `metric` over every (set, chunker) pair."""
    means: dict[str, float] = {}
    for label in next(iter(reports.values())):
        values = [r[metric] for per_set in reports.values() for r in per_set[label]["results"].values()]
        means[label] = statistics.fmean(values)
    best = {}
    for fusion in ("rrf", "weighted"):
        labels = [lb for lb in means if lb.startswith(f"hybrid-{fusion}-")]
        if labels:
            top = max(labels, key=lambda lb: means[lb])
            best[fusion] = {"lexical_weight": float(top.rsplit("-", 1)[1]), f"mean_{metric}": means[top]}
    return {"metric": metric, "means": means, "best": best}


def format_set(name: str, per_setting: dict[str, dict[str, Any]]) -> str:
    chunkers = list(next(iter(per_setting.values()))["results"])
    head = ["setting", *[f"{c} {m}" for c in chunkers for m in ("hit@1", "hit@10", "mrr@10")]]
    lines = [f"## {name}", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, report in per_setting.items():
        cells = [f"{report['results'][c][m]:.3f}" for c in chunkers for m in ("hit@1", "hit@10", "mrr@10")]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval", description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="emanual_q,emanual,chroma_eval,covid_qa")
    parser.add_argument("--chunkers", default="naive-500t,recursive,chop")
    parser.add_argument("--weights", default="0.3,0.5,0.7")
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--long-text", choices=["truncate", "window"], default="truncate")
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--workspace", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    from core.__main__ import _quiet_libraries
    from core.bench import BenchOptions, bench_dataset
    from core.datasets import load_dataset
    from core.embeddings import BUNDLED_MINILM, make_embedder
    from core.index import StoreSettings, VectorStore
    from core.llm.factory import make_cnm_backend
    from core.retrieval import RetrievalSettings
    from core.workspace import Workspace

    _quiet_libraries()
    ws = Workspace.open(args.workspace)
    embedder = make_embedder(BUNDLED_MINILM, long_text=args.long_text, cache_dir=ws.cache)
    store = VectorStore(StoreSettings(path=ws.chroma))
    llm = make_cnm_backend("rule", ws.cache, embedder=embedder)
    specs = [s for s in args.chunkers.split(",") if s]
    ks = sorted({int(k) for k in args.k.split(",")})
    grid = settings_grid([float(w) for w in args.weights.split(",")])
    reports: dict[str, dict[str, dict[str, Any]]] = {}
    for set_name in [s for s in args.sets.split(",") if s]:
        folder, qualify = SETS[set_name]
        dataset = load_dataset(args.shared / folder)
        reports[set_name] = {}
        for label, kwargs in grid:
            print(f"{set_name}: {label}", file=sys.stderr, flush=True)
            options = BenchOptions(ks, qualify, False, llm, retrieval=RetrievalSettings(**kwargs))
            reports[set_name][label] = bench_dataset(dataset, specs, options, embedder, store, ws)
        print(format_set(set_name, reports[set_name]))
        print()
    choice = choose_weights(reports)
    for fusion, best in choice["best"].items():
        print(f"best lexical weight for {fusion}: {best['lexical_weight']:g} "
              f"(mean MRR@10 over every set and chunker {best['mean_mrr@10']:.3f})")
    print(f"dense: {choice['means']['dense']:.3f}, bm25: {choice['means']['bm25']:.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"long_text": args.long_text, "chunkers": specs, "choice": choice,
                                        "reports": reports}, indent=1), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
