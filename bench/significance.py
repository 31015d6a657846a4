"""What intervals and paired tests add to a benchmark run, timed in this process.

    python -m bench.significance [--report docs/results/emanual_reranked.json] [--chunkers 8] [--questions 56]
                                 [--repeat 3]

With `--report`, the per-question scores of that bench report are used as they are; without it, a seeded table of
`--chunkers` x `--questions` scores shaped like a real run's (hit@k and wrong_doc@k 0/1, mrr@k graded) stands in,
which is what the cost depends on: the number of chunkers, questions and metrics, never the values. Prints the
seconds of `with_intervals` over every chunker and of `compare` over every pair, the best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from core.evaluation.bench import with_intervals
from core.evaluation.metric_at import MetricAt
from core.evaluation.significance import compare, headline_metrics

KS = (1, 3, 10)
METRIC_NAMES = ("hit", "mrr", "ndcg", "wrong_doc")


def synthetic(n_chunkers: int, n_questions: int, seed: int = 0) -> dict[str, dict[str, list[float]]]:
    """Per-question scores for `n_chunkers` made-up chunkers, each metric at each of `KS`."""
    rng = np.random.default_rng(seed)
    table: dict[str, dict[str, list[float]]] = {}
    for i in range(n_chunkers):
        rank = rng.integers(1, 21, size=n_questions)  # where the first right chunk came, 1..20
        scores = {}
        for k in KS:
            found = rank <= k
            scores[MetricAt("hit", k).key] = found.astype(float).tolist()
            scores[MetricAt("mrr", k).key] = np.where(found, 1.0 / rank, 0.0).tolist()
            scores[MetricAt("ndcg", k).key] = np.where(found, 1.0 / np.log2(rank + 1), 0.0).tolist()
            scores[MetricAt("wrong_doc", k).key] = (rng.random(n_questions) < 0.5).astype(float).tolist()
        table[f"chunker-{i}"] = scores
    return table


def from_report(path: Path) -> tuple[dict[str, dict[str, list[float]]], list[int], bool]:
    """The per-question scores, ks and whether spans are scored, as a bench report keeps them."""
    report = json.loads(path.read_text(encoding="utf-8"))
    table = {spec: r["per_question"] for spec, r in report["results"].items()}
    has_spans = any(m.startswith("span_recall") for scores in table.values() for m in scores)
    return table, list(report["k"]), has_spans


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """The fastest of `repeat` timed calls of `work`, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(table: Mapping[str, Mapping[str, Sequence[float]]], ks: Sequence[int], has_spans: bool,
            repeat: int) -> dict[str, float]:
    """Seconds for every chunker's intervals and for every pair's test on the headline metrics."""
    metrics = headline_metrics(ks, has_spans)
    return {"intervals": best_of(repeat, lambda: [with_intervals(s) for s in table.values()]),
            "pairs": best_of(repeat, lambda: compare(table, metrics))}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="a bench report with per-question scores")
    parser.add_argument("--chunkers", type=int, default=8)
    parser.add_argument("--questions", type=int, default=56)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.report:
        table, ks, has_spans = from_report(args.report)
        source = str(args.report)
    else:
        table, ks, has_spans = synthetic(args.chunkers, args.questions), list(KS), False
        source = "synthetic"
    n_questions = len(next(iter(next(iter(table.values())).values()), []))
    n_metrics = len(next(iter(table.values())))
    seconds = measure(table, ks, has_spans, args.repeat)
    print(f"{source}: {len(table)} chunkers x {n_questions} questions x {n_metrics} metrics, "
          f"{len(table) * (len(table) - 1) // 2} pairs on {len(headline_metrics(ks, has_spans))} headline metrics")
    print(f"intervals {seconds['intervals']:.3f} s, pairs {seconds['pairs']:.3f} s, "
          f"total {seconds['intervals'] + seconds['pairs']:.3f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
