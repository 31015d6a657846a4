"""The second stage, measured on every set we have: sentence max-sim reranking of the top hits, fused with the
first-stage rank at several weights, against no reranking.

    python -m bench.rerank [--sets sample_qj,sample_q,emanual_q,eurorack_q,chroma_eval,covid_qa]
                           [--chunkers naive-500t,recursive,chop,chop:retrieval=filter] [--weights 0,0.3,0.4,0.5,0.7,1]
                           [--depth 20] [--out docs/results/rerank_study.json]

Every setting goes through `core.evaluation.bench.bench_dataset` with the app's default retrieval (hybrid, RRF,
lexical weight 0.9) and `RetrievalSettings(rerank="maxsim", rerank_depth=D, rerank_weight=W)`; weight 0 is the
first stage's order, so its row is the default without a reranker. Chunk runs, vectors and sentence vectors are
cached in the workspace, so only the first setting of a set pays for them. Specs with a retrieval policy
(`retrieval=...`) run only on the sets whose questions name a product.

The choice (`choose`): among the weights that lose no more than `MAX_LOSS` of mean hit@1 or hit@10 on any one set
against no reranking, and no span recall@5 for any chunker of the large sets (`LARGE_SETS`, hundreds of questions,
where a loss of a few questions is a measured loss and not one question's noise), the one with the best mean MRR@10
over every (set, chunker) pair (MRR@10 counts the top hit most and still sees the rest of the top ten); weight 0 when
none qualifies.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import write_study
from bench.study_metrics import HIT_1, HIT_10, MRR_10, SPAN_RECALL_5

ROOT = Path(__file__).resolve().parents[1]
#: set -> (folder, product-named questions, joined into one stream)
SETS = {"sample_qj": ("sample_data/qa", True, True), "sample_q": ("sample_data/qa", True, False),
        "emanual_q": ("emanual_galaxy", True, False), "eurorack_q": ("eurorack_modules", True, False),
        "chroma_eval": ("chroma_eval", False, False), "covid_qa": ("covid_qa", False, False)}
MAX_LOSS = 0.02
LARGE_SETS = ("chroma_eval", "covid_qa")
METRICS = (HIT_1, HIT_10, MRR_10)


def label(weight: float) -> str:
    return "none" if weight == 0 else f"maxsim-{weight:g}"


def set_means(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per setting, each metric's mean over the set's chunkers (keyed as a report keys it)."""
    return {lb: {m.key: statistics.fmean(m.read(r) for r in rep["results"].values()) for m in METRICS}
            for lb, rep in reports.items()}


def choose(reports: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """See the module docstring; also every setting's mean over all pairs and worst per-set loss."""
    labels = list(next(iter(reports.values())))
    per_set = {s: set_means(r) for s, r in reports.items()}
    rows = {}
    for lb in labels:
        pairs = [r for rep in reports.values() for r in rep[lb]["results"].values()]
        losses = {m: max(m.read(per_set[s]["none"]) - m.read(per_set[s][lb]) for s in reports) for m in (HIT_1, HIT_10)}
        span_loss = max((SPAN_RECALL_5.read(reports[s]["none"]["results"][c]) - SPAN_RECALL_5.read(r)
                         for s in reports if s in LARGE_SETS for c, r in reports[s][lb]["results"].items()),
                        default=0.0)
        rows[lb] = {**{f"mean_{m}": statistics.fmean(m.read(p) for p in pairs) for m in METRICS},
                    **{f"worst_{m}_loss": v for m, v in losses.items()}, "worst_large_span_recall@5_loss": span_loss}
    allowed = [lb for lb in labels if max(rows[lb]["worst_hit@1_loss"], rows[lb]["worst_hit@10_loss"]) <= MAX_LOSS
               and rows[lb]["worst_large_span_recall@5_loss"] <= 1e-9]
    winner = max(allowed, key=lambda lb: rows[lb]["mean_mrr@10"]) if allowed else "none"
    return {"rule": f"best mean MRR@10 among the weights losing at most {MAX_LOSS} of a set's mean hit@1 or hit@10 "
                    f"and no chunker's span recall@5 on {' or '.join(LARGE_SETS)}",
            "max_loss": MAX_LOSS, "rows": rows, "winner": winner, "per_set": per_set}


def tables(study: dict[str, Any]) -> list[str]:
    """The study as Markdown (printed, and in docs/RETRIEVAL.md)."""
    choice, reports = study["choice"], study["reports"]
    lines = ["Over every (set, chunker) pair: mean hit@1 / hit@10 / MRR@10, and the largest loss of a set's mean "
             "against no reranking.", "",
             "| setting | mean hit@1 | mean hit@10 | mean MRR@10 | worst hit@1 loss | worst hit@10 loss | worst span "
             f"recall@5 loss ({', '.join(LARGE_SETS)}) |",
             "|---|---|---|---|---|---|---|"]
    for lb, row in choice["rows"].items():
        name = f"**{lb}**" if lb == choice["winner"] else lb
        lines.append(f"| {name} | {row['mean_hit@1']:.3f} | {row['mean_hit@10']:.3f} | {row['mean_mrr@10']:.3f} | "
                     f"{row['worst_hit@1_loss']:+.3f} | {row['worst_hit@10_loss']:+.3f} | "
                     f"{row.get('worst_large_span_recall@5_loss', 0.0):+.3f} |")
    lines += ["", "Each cell: hit@1 / hit@10 / MRR@10 / span recall@5.", ""]
    for set_name, per_setting in reports.items():
        chunkers = list(next(iter(per_setting.values()))["results"])
        n = next(iter(per_setting.values()))["n_questions"]
        lines += [f"#### {set_name} ({n} questions)", "",
                  "| setting | " + " | ".join(f"`{c}`" for c in chunkers) + " |", "|---|" + "---|" * len(chunkers)]
        for lb, rep in per_setting.items():
            lines.append(f"| {lb} | " + " | ".join(
                " / ".join(f"{m.read(rep['results'][c]):.3f}" for m in (*METRICS, SPAN_RECALL_5)) for c in chunkers)
                + " |")
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rerank", description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of: {', '.join(SETS)}")
    parser.add_argument("--chunkers", default="naive-500t,recursive,chop,chop:retrieval=filter")
    parser.add_argument("--weights", default="0,0.3,0.4,0.5,0.7,1", help="the reranker's weights (0: no reranking)")
    parser.add_argument("--depth", type=int, default=20, help="first-stage hits the reranker re-orders")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--workspace", type=Path, help="workspace folder (caches); default ~/.chunklens")
    parser.add_argument("--out", type=Path, help="write the study's JSON here")
    args = parser.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    if unknown := [s for s in sets if s not in SETS]:
        parser.error(f"unknown set(s) {', '.join(unknown)} (use {', '.join(SETS)})")

    from core.cli.flags import quiet_libraries
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.ingest.datasets import load_dataset
    from core.services import build_services, needs_of
    from core.settings import Settings
    from core.store.retrieval import RetrievalSettings

    quiet_libraries()
    specs = [s for s in args.chunkers.split(",") if s]
    settings = Settings(workspace=str(args.workspace)) if args.workspace else Settings()
    services = build_services(settings, needs=needs_of(specs))
    base = settings.retrieval_settings()
    weights = [float(w) for w in args.weights.split(",") if w]
    reports: dict[str, dict[str, dict[str, Any]]] = {}
    for set_name in sets:
        folder, qualify, join = SETS[set_name]
        dataset = load_dataset(ROOT / folder if folder.startswith("sample_data") else args.shared / folder)
        set_specs = [s for s in specs if qualify or "retrieval=" not in s]
        reports[set_name] = {}
        for w in weights:
            print(f"{set_name}: {label(w)}", file=sys.stderr, flush=True)
            retrieval = RetrievalSettings(base.mode, base.fusion, base.lexical_weight, rerank="maxsim" if w else "none",
                                          rerank_depth=args.depth, rerank_weight=w or 1.0)
            report = bench_dataset(dataset, set_specs, BenchOptions([1, 5, 10], qualify, join, retrieval), services)
            reports[set_name][label(w)] = report.without_sources().to_json()  # the bulk of a report, not read here
    study = {"command": "python -m bench.rerank " + " ".join(argv if argv is not None else sys.argv[1:]),
             "depth": args.depth, "chunkers": specs, "reports": reports}
    study["choice"] = choose(reports)
    print("\n".join(tables(study)))
    print(f"chosen: {study['choice']['winner']}")
    write_study(args.out, study)
    return 0


if __name__ == "__main__":
    sys.exit(main())
