"""Does a question set rank chunkers like another one? Kendall's tau and top-1 agreement between two bench reports.

A generated question set is only useful if it leads to the same choice of chunker as questions written by people
for the same documents. What matters is the order, not the figures (generated questions may be easier), so the two
sets are compared by rank correlation over the chunkers both scored: Kendall's tau-b (scipy, which handles ties),
and whether the best chunker is the same (with ties, whether the generated set's best is among the gold's best).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from scipy.stats import kendalltau

from core.infra.errors import ChunkLensError
from core.infra.jsonio import loads_checked

#: the metrics the rankings are compared by (issue: MRR@10 and Hit@5)
AGREEMENT_METRICS = ("mrr@10", "hit@5")


def _best(scores: Mapping[str, float]) -> list[str]:
    top = max(scores.values())
    return sorted(c for c, v in scores.items() if math.isclose(v, top, abs_tol=1e-12))


class RankingAgreement(TypedDict):
    """Two sets' rankings of the chunkers both scored, as an agreement study writes them."""

    chunkers: list[str]
    tau: float | None  # None where one set scored every chunker alike
    p_value: float | None
    best_gold: list[str]
    best_generated: list[str]
    top1_agree: bool


def ranking_agreement(gold: Mapping[str, float], generated: Mapping[str, float]) -> RankingAgreement:
    """Kendall's tau-b of the chunkers' scores on two sets (the chunkers both have), and top-1 agreement."""
    names = [c for c in gold if c in generated]
    if len(names) < 2:
        raise ChunkLensError("a ranking needs at least two chunkers scored on both sets")
    tau, p = kendalltau([gold[c] for c in names], [generated[c] for c in names])
    best_gold, best_generated = _best({c: gold[c] for c in names}), _best({c: generated[c] for c in names})
    return {"chunkers": names, "tau": None if math.isnan(tau) else round(float(tau), 3),
            "p_value": None if math.isnan(p) else round(float(p), 4),
            "best_gold": best_gold, "best_generated": best_generated,
            "top1_agree": bool(set(best_generated) & set(best_gold))}


def report_agreement(gold: Mapping[str, Any], generated: Mapping[str, Any],
                     metrics: Sequence[str] = AGREEMENT_METRICS) -> dict[str, RankingAgreement]:
    """`ranking_agreement` for each metric, between two `python -m core bench` reports."""
    out = {}
    for m in metrics:
        try:
            g = {c: r[m] for c, r in gold["results"].items()}
            h = {c: r[m] for c, r in generated["results"].items()}
        except KeyError as exc:
            raise ChunkLensError(f"a report has no {exc.args[0]} (bench with --k including it)") from None
        out[m] = ranking_agreement(g, h)
    return out


def agreement_table(study: Mapping[str, Any]) -> str:
    """One agreement study (bench/agreement.py's JSON) as Markdown: per metric, tau and top-1, then each chunker's
    score on both sets."""
    lines = ["| metric | Kendall's tau-b | p | best on gold | best on generated | top-1 agrees |",
             "|---|---|---|---|---|---|"]
    for m, a in study["agreement"].items():
        tau = "n/a" if a["tau"] is None else f"{a['tau']:.3f}"
        p = "n/a" if a["p_value"] is None else f"{a['p_value']:.3f}"
        lines.append(f"| {m} | {tau} | {p} | {', '.join(a['best_gold'])} | {', '.join(a['best_generated'])} | "
                     f"{'yes' if a['top1_agree'] else 'no'} |")
    metrics = list(study["agreement"])
    lines += ["", "| chunker | " + " | ".join(f"{m} gold | {m} generated" for m in metrics) + " |",
              "|---|" + "---|---|" * len(metrics)]
    gold, generated = study["gold"]["results"], study["generated"]["results"]
    for c in study["agreement"][metrics[0]]["chunkers"]:
        cells = [f"{gold[c][m]:.3f} | {generated[c][m]:.3f}" for m in metrics]
        lines.append(f"| `{c}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def agreement_lines(folder: Path) -> list[str]:
    """One plain sentence per agreement study committed in `folder` (`agreement_*.json`), for the app to say how
    far a generated set can be trusted: what generated it, on which set, tau by MRR@10 and whether the best
    chunker was the same. Unreadable files are skipped."""
    lines = []
    for path in sorted(Path(folder).glob("agreement_*.json")):
        try:
            study = loads_checked(path.read_bytes())
            a = study["agreement"]["mrr@10"]
            tau = "undefined (one set scored every chunker alike)" if a["tau"] is None else f"{a['tau']:.2f}"
            same = "the same" if a["top1_agree"] else "not the same"
            lines.append(f"{study['label']} on {study['gold_set']}: Kendall's tau {tau} against the hand-made "
                         f"questions' ranking by MRR@10; best chunker {same} ({', '.join(a['best_generated'])} "
                         f"against {', '.join(a['best_gold'])}).")
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return lines
