"""Is a cheaper embedder good enough to be the default? The same chunkers, asked the same questions, under two
embedders, compared question by question.

Two bench reports of one set (the same chunkers and questions, only `--embedder` differs) give, per chunker and
headline metric, the per-question differences new - old: their mean, a bootstrap interval and the sign-flip test's
p, Holm-corrected over that set's chunkers and metrics (the family a bench report corrects over too). The rule the
study applies is the one ChunkLens holds a default to: the cheaper embedder becomes the default only if no pair is
significant on any set; otherwise it stays a setting, and the study says what it costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np

from core.evaluation.significance import ALPHA, headline_metrics, holm, intervals, sign_flip_p
from core.evaluation.verdicts import lower_is_better  # wrong_doc@k: a rise is a loss
from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject, loads_checked

#: the committed study the app quotes (docs/results, written by `python -m bench.embedder_choice`)
STUDY_FILE = "embedder_choice.json"
class PairDiff(TypedDict):
    """One chunker on one metric, new embedder against old: the per-question mean difference new - old, its
    interval, p before and after Holm's correction, and whether it is a loss."""

    chunker: str
    metric: str
    old: float
    new: float
    diff: float
    ci95: list[float]
    p: float
    p_holm: float
    significant: bool
    worse: bool


class SetPairDiff(PairDiff):
    """A pair named with its set, as the study lists its significant pairs and its largest loss."""

    set: str


class PairedSet(TypedDict):
    """One set's comparison (`paired_set`)."""

    set: str
    dataset: str | None
    n_questions: int
    chunkers: list[str]
    metrics: list[str]
    old_embedder: str | None
    new_embedder: str | None
    pairs: list[PairDiff]


class ReportPair(TypedDict):
    """The two report files a set was compared from (what `python -m bench.embedder_choice` adds)."""

    set: str
    old: str
    new: str


class EmbedderStudy(TypedDict):
    """The whole study (`embedder_study`), as docs/results/embedder_choice.json holds it."""

    old: str
    new: str
    alpha: float
    rule: str
    switch: bool
    significant_pairs: list[SetPairDiff]
    largest_loss: SetPairDiff | None
    uncorrected_below_alpha: int
    pairs_compared: int
    sets: list[PairedSet]
    reports: NotRequired[list[ReportPair]]


def _ks(report: Mapping[str, Any]) -> list[int]:
    return [int(k) for k in report["k"]]


def paired_set(name: str, old: Mapping[str, Any], new: Mapping[str, Any],
               metrics: Sequence[str] | None = None) -> PairedSet:
    """One set's comparison: every chunker both reports ran, on `metrics` (default: the headline metrics), each
    pair new - old with its interval, p and Holm-corrected p. The reports must have asked the same questions in
    the same order, at the same k, under the same retrieval; anything else is refused in one line."""
    if list(old.get("qids") or []) != list(new.get("qids") or []):
        raise ChunkLensError(f"{name}: the two reports did not ask the same questions in the same order")
    if _ks(old) != _ks(new):
        raise ChunkLensError(f"{name}: the two reports were scored at different k ({old['k']} and {new['k']})")
    if old.get("retrieval") != new.get("retrieval") or old.get("qualify_queries") != new.get("qualify_queries"):
        raise ChunkLensError(f"{name}: the two reports used different retrieval or question settings")
    if old.get("embedder") == new.get("embedder"):
        raise ChunkLensError(f"{name}: both reports used the same embedder ({old.get('embedder')})")
    chunkers = [c for c in old["results"] if c in new["results"]]
    if not chunkers:
        raise ChunkLensError(f"{name}: the two reports share no chunker")
    has_spans = any(m.startswith("span_recall") for m in old["results"][chunkers[0]]["per_question"])
    wanted = list(metrics) if metrics else headline_metrics(_ks(old), has_spans)
    rows, diffs = [], []
    for chunker in chunkers:
        a, b = old["results"][chunker]["per_question"], new["results"][chunker]["per_question"]
        for metric in wanted:
            if metric in a and metric in b:
                rows.append((chunker, metric))
                diffs.append(np.asarray(b[metric], float) - np.asarray(a[metric], float))
    table = np.vstack(diffs)
    bounds, pvalues = intervals(table), sign_flip_p(table)
    adjusted = holm(list(pvalues))
    pairs: list[PairDiff] = []
    for j, (chunker, metric) in enumerate(rows):
        was, now = old["results"][chunker][metric], new["results"][chunker][metric]
        pairs.append({"chunker": chunker, "metric": metric, "old": was, "new": now, "diff": float(table[j].mean()),
                      "ci95": [float(bounds[j, 0]), float(bounds[j, 1])], "p": float(pvalues[j]),
                      "p_holm": float(adjusted[j]), "significant": bool(adjusted[j] < ALPHA),
                      "worse": bool((now > was) if lower_is_better(metric) else (now < was))})
    return {"set": name, "dataset": new.get("dataset"), "n_questions": table.shape[1], "chunkers": chunkers,
            "metrics": wanted, "old_embedder": old.get("embedder"), "new_embedder": new.get("embedder"),
            "pairs": pairs}


def embedder_study(old_spec: str, new_spec: str, sets: Sequence[PairedSet]) -> EmbedderStudy:
    """The whole study from `paired_set` results: the decision (switch only if no pair is significant on any
    set) and, whatever it is, what the new embedder costs: its significant pairs, and its largest loss."""
    named: list[SetPairDiff] = [{"set": s["set"], **p} for s in sets for p in s["pairs"]]
    significant = [p for p in named if p["significant"]]
    losses = [p for p in named if p["worse"]]
    largest = max(losses, key=lambda p: abs(p["diff"]), default=None)
    return {"old": old_spec, "new": new_spec, "alpha": ALPHA,
            "rule": "switch the default only if no pair (same chunker, old embedder against new) is significant "
                    "on any set, Holm-corrected over each set's chunkers and metrics",
            "switch": not significant, "significant_pairs": significant, "largest_loss": largest,
            "uncorrected_below_alpha": sum(p["p"] < ALPHA for s in sets for p in s["pairs"]),
            "pairs_compared": sum(len(s["pairs"]) for s in sets), "sets": list(sets)}


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def study_table(study: Mapping[str, Any]) -> str:
    """The study as Markdown: one row per set and chunker, each metric's new - old with its interval and
    Holm-corrected p (bold where significant), then the decision in one line."""
    lines = []
    metrics = list(dict.fromkeys(m for s in study["sets"] for m in s["metrics"]))
    header = ["set", "questions", "chunker", *[f"{m}: new - old [95 %], p" for m in metrics]]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in study["sets"]:
        by = {(p["chunker"], p["metric"]): p for p in s["pairs"]}
        for chunker in s["chunkers"]:
            cells = []
            for m in metrics:
                p = by.get((chunker, m))
                if p is None:
                    cells.append("-")
                    continue
                text = (f"{_signed(p['diff'])} [{_signed(p['ci95'][0])}, {_signed(p['ci95'][1])}], "
                        f"p {p['p_holm']:.2f}")
                cells.append(f"**{text}**" if p["significant"] else text)
            lines.append(f"| {s['set']} | {s['n_questions']} | `{chunker}` | " + " | ".join(cells) + " |")
    lines += ["", decision_line(study)]
    return "\n".join(lines)


def decision_line(study: Mapping[str, Any]) -> str:
    """One sentence: which embedder the study keeps as the default, and on what evidence."""
    n_sets, n_pairs = len(study["sets"]), study["pairs_compared"]
    sets = f"{n_sets} set" + ("s" if n_sets != 1 else "")
    raw = study.get("uncorrected_below_alpha", 0)
    uncorrected = f" ({raw} below {study['alpha']:.2f} before the correction)" if raw else ""
    loss = study.get("largest_loss")
    cost = (f"; its largest loss is {loss['metric']} {_signed(loss['diff'])} for `{loss['chunker']}` on "
            f"{loss['set']} ({_fmt_interval(loss['ci95'])}, p {loss['p_holm']:.2f} after Holm)" if loss else
            "; it is behind on no pair")
    if study["switch"]:
        return (f"No pair of the {n_pairs} on {sets} is significant (Holm, alpha {study['alpha']:.2f})"
                f"{uncorrected}: `{study['new']}` is the default{cost}.")
    sig = study["significant_pairs"]
    named = ", ".join(f"{p['metric']} of `{p['chunker']}` on {p['set']} {_signed(p['diff'])}, "
                      f"{'a loss' if p['worse'] else 'in its favour'}" for p in sig)
    return (f"{len(sig)} of {n_pairs} pairs on {sets} are significant ({named}){uncorrected}: `{study['old']}` "
            f"stays the default and `{study['new']}` is the fast setting{cost}.")


def _fmt_interval(ci: Sequence[float]) -> str:
    return f"[{_signed(ci[0])}, {_signed(ci[1])}]"


def load_study(folder: Path) -> JsonObject | None:
    """The committed study in `folder`, or None when there is none or it cannot be read."""
    try:
        study = loads_checked((Path(folder) / STUDY_FILE).read_bytes())
        return study if isinstance(study, dict) and "sets" in study else None
    except (OSError, ValueError):
        return None


def fast_setting_cost(folder: Path) -> str | None:
    """What the fast embedder costs, in one line for the app's sidebar, from the committed study (None without
    one): the decision and the largest loss seen."""
    study = load_study(folder)
    return decision_line(study) if study else None
