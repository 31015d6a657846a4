"""What a bench report says, in sentences generated from its numbers only ("What this shows" of the HTML report
and of the app's pages), and the check that a dict is a bench report at all."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.evaluation.collisions import top1_collisions
from core.evaluation.verdicts import closest_gap
from core.infra.errors import ChunkLensError

Report = Mapping[str, Any]

#: an embedder leaving at least this share of a chunker's embedded text unread gets a sentence in the summary
UNREAD_NOTABLE = 0.10


def number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)



# --- checks ------------------------------------------------------------------------------------------------------

def check_report(report: Any, source: str = "report") -> None:
    """A ChunkLensError naming `source` unless `report` is a bench report this module can render: `k` (positive
    integers), `results` with hit@k and mrr@k of every chunker at every k. Everything else is optional."""
    if not isinstance(report, Mapping) or "results" not in report or "k" not in report:
        raise ChunkLensError(f"{source}: not a bench report (no 'results' and 'k')")
    ks, results = report["k"], report["results"]
    if (not isinstance(ks, list) or not ks
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks)):
        raise ChunkLensError(f"{source}: not a bench report ('k' is not a list of cut-offs)")
    if not isinstance(results, Mapping) or not results:
        raise ChunkLensError(f"{source}: not a bench report (no chunker results)")
    for spec, r in results.items():
        if not isinstance(r, Mapping):
            raise ChunkLensError(f"{source}: not a bench report (the result of '{spec}' is not an object)")
        missing = [f"{m}@{k}" for m in ("hit", "mrr") for k in ks if number_or_none(r.get(f"{m}@{k}")) is None]
        if missing:
            raise ChunkLensError(f"{source}: not a bench report ('{spec}' has no {', '.join(missing[:3])})")


def collisions_of(report: Report) -> tuple[list[str], list[str], list[list[float | None]]]:
    """`top1_collisions`, or nothing when the per-question sources are not the [qid, gold, top-1] rows they
    should be (a hand-edited or damaged report still renders, without the heat-map)."""
    try:
        chunkers, docs, matrix = top1_collisions(report)
    except (TypeError, ValueError, AttributeError):
        return [], [], []
    return [str(c) for c in chunkers], [str(d) for d in docs], matrix


# --- the generated paragraph -----------------------------------------------------------------------------------

def _extremes(values: Mapping[str, float]) -> tuple[list[str], float, list[str], float]:
    """(the names with the highest value, that value, the names with the lowest, that value)."""
    hi, lo = max(values.values()), min(values.values())
    top = [n for n, v in values.items() if math.isclose(v, hi, abs_tol=1e-9)]
    bottom = [n for n, v in values.items() if math.isclose(v, lo, abs_tol=1e-9)]
    return top, hi, bottom, lo


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def values_of(report: Report, key: str) -> dict[str, float]:
    """`key` of every chunker, or {} unless every chunker has a number there."""
    out = {spec: number_or_none(r.get(key)) for spec, r in report["results"].items()}
    return {s: v for s, v in out.items() if v is not None} if all(v is not None for v in out.values()) else {}


def _rank_sentence(report: Report, metric: str, k: int) -> str:
    values = values_of(report, f"{metric}@{k}")
    top, hi, bottom, lo = _extremes(values)
    label = f"{metric}@{k}"
    if len(values) == 1:
        return f"Only {top[0]} was run: {label} {hi:.3f}."
    if len(top) == len(values):
        return f"By {label}, every chunker scores {hi:.3f}."
    lead = (f"By {label}, {top[0]} is best with {hi:.3f}" if len(top) == 1
            else f"By {label}, {_names(top)} tie for best with {hi:.3f}")
    verb = "is" if len(bottom) == 1 else "are"
    return f"{lead}; {_names(bottom)} {verb} last with {lo:.3f}, a spread of {hi - lo:.3f}."


def summary_sentences(report: Report) -> list[str]:
    """'What this shows', from the numbers only: the best chunker by hit at the smallest k and by MRR at the
    largest, the spread between best and worst, how much one question weighs, where wrong_doc is highest and
    lowest, the document whose questions collide most at top 1, and any chunker whose text the embedder leaves
    largely unread. Plain text: the caller escapes it."""
    check_report(report)
    ks = sorted(report["k"])
    k1, kmax = ks[0], ks[-1]
    n_chunkers = len(report["results"])
    sentences = [_rank_sentence(report, "hit", k1)]
    if n_chunkers > 1:
        mrr = _rank_sentence(report, "mrr", kmax)
        hit_best = _extremes(values_of(report, f"hit@{k1}"))[0]
        mrr_best = _extremes(values_of(report, f"mrr@{kmax}"))[0]
        if hit_best == mrr_best and len(mrr_best) < n_chunkers:
            mrr = mrr.replace(" is best with", " is best too, with").replace(" tie for best with",
                                                                           " tie for best too, with")
        sentences.append(mrr)
    elif kmax != k1:
        sentences.append(f"Its mrr@{kmax} is {values_of(report, f'mrr@{kmax}')[next(iter(report['results']))]:.3f}.")
    n_questions = report.get("n_questions")
    if isinstance(n_questions, int) and n_questions > 0 and n_chunkers > 1:
        sentences.append(f"With {n_questions} questions, one question moves hit@k by {1 / n_questions:.3f}.")
        gap = closest_gap(report, f"hit@{k1}")
        if gap is not None:
            sentences.append(gap.sentence())
    wrong = values_of(report, f"wrong_doc@{kmax}")
    if wrong and n_chunkers > 1:
        top, hi, bottom, lo = _extremes(wrong)
        if len(top) == len(wrong):
            sentences.append(f"wrong_doc@{kmax} (the share of the top {kmax} from a document without the answer) "
                             f"is {hi:.3f} for every chunker.")
        else:
            sentences.append(f"wrong_doc@{kmax} (the share of the top {kmax} from a document without the answer) "
                             f"is highest for {_names(top)} ({hi:.3f}) and lowest for {_names(bottom)} ({lo:.3f}).")
    chunkers, docs, matrix = collisions_of(report)
    if len(docs) > 1 and chunkers:
        means = {}
        for j, doc in enumerate(docs):
            cells = [row[j] for row in matrix if row[j] is not None]
            if cells:
                means[doc] = sum(cells) / len(cells)
        if means and max(means.values()) > 0:
            top, hi, _, _ = _extremes(means)
            sentences.append(f"Top-1 collisions are most frequent for the questions about {_names(top)}: "
                             f"{hi:.0%} of them get their first hit from another document (mean over "
                             f"{len(chunkers)} chunker{'s' if len(chunkers) > 1 else ''}).")
    unread = {s: v for s, v in unread_shares(report).items() if v >= UNREAD_NOTABLE}
    if unread:
        parts = [f"{v:.0%} of {s}'s" for s, v in sorted(unread.items(), key=lambda kv: -kv[1])]
        mode = report.get("retrieval", {}).get("mode", "dense") if isinstance(report.get("retrieval"), Mapping) \
            else "dense"
        sentences.append("The embedder never reads " + _names(parts) + " embedded text (past its input limit)"
                         + ("; BM25 reads all of it." if mode in ("bm25", "hybrid") else "."))
    return sentences


def unread_shares(report: Report) -> dict[str, float]:
    out = {}
    for spec, r in report["results"].items():
        value = number_or_none(r.get("unread_share"))
        if value is not None:
            out[spec] = value
    return out


