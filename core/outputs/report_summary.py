"""What a bench report says, in sentences generated from its numbers only ("What this shows" of the HTML report
and of the app's pages)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.evaluation.collisions import top1_collisions
from core.evaluation.metric_at import MetricAt
from core.evaluation.results import BenchReport, Metric
from core.evaluation.verdicts import closest_gap

#: an embedder leaving at least this share of a chunker's embedded text unread gets a sentence in the summary
UNREAD_NOTABLE = 0.10


def view_of(report: BenchReport | Mapping[str, Any], source: str = "report") -> BenchReport:
    """`report` as a checked view (a JSON object is checked first: `BenchReport.of`)."""
    return report if isinstance(report, BenchReport) else BenchReport.of(report, source)


def collisions_of(report: BenchReport) -> tuple[list[str], list[str], list[list[float | None]]]:
    """`top1_collisions`, or nothing when the per-question sources are not the [qid, gold, top-1] rows they
    should be (a hand-edited or damaged report still renders, without the heat-map)."""
    try:
        chunkers, docs, matrix = top1_collisions(report.to_json())
    except (TypeError, ValueError, AttributeError):
        return [], [], []
    return [str(c) for c in chunkers], [str(d) for d in docs], matrix


def _extremes(values: Mapping[str, float]) -> tuple[list[str], float, list[str], float]:
    """(the names with the highest value, that value, the names with the lowest, that value)."""
    hi, lo = max(values.values()), min(values.values())
    top = [n for n, v in values.items() if math.isclose(v, hi, abs_tol=1e-9)]
    bottom = [n for n, v in values.items() if math.isclose(v, lo, abs_tol=1e-9)]
    return top, hi, bottom, lo


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _rank_sentence(report: BenchReport, metric: Metric, k: int) -> str:
    values = report.values(metric, k)
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


def summary_sentences(report: BenchReport | Mapping[str, Any]) -> list[str]:
    """'What this shows', from the numbers only: the best chunker by hit at the smallest k and by MRR at the
    largest, the spread between best and worst, how much one question weighs, where wrong_doc is highest and
    lowest, the document whose questions collide most at top 1, and any chunker whose text the embedder leaves
    largely unread. Plain text: the caller escapes it."""
    report = view_of(report)
    ks = sorted(report.ks)
    k1, kmax = ks[0], ks[-1]
    n_chunkers = len(report.results)
    sentences = [_rank_sentence(report, "hit", k1)]
    if n_chunkers > 1:
        mrr = _rank_sentence(report, "mrr", kmax)
        hit_best = _extremes(report.values("hit", k1))[0]
        mrr_best = _extremes(report.values("mrr", kmax))[0]
        if hit_best == mrr_best and len(mrr_best) < n_chunkers:
            mrr = mrr.replace(" is best with", " is best too, with").replace(" tie for best with",
                                                                           " tie for best too, with")
        sentences.append(mrr)
    elif kmax != k1:
        sentences.append(f"Its mrr@{kmax} is {report.values('mrr', kmax)[next(iter(report.results))]:.3f}.")
    n_questions = report.n_questions
    if n_questions and n_questions > 0 and n_chunkers > 1:
        sentences.append(f"With {n_questions} questions, one question moves hit@k by {1 / n_questions:.3f}.")
        gap = closest_gap(report.to_json(), MetricAt("hit", k1))
        if gap is not None:
            sentences.append(gap.sentence())
    wrong = report.values("wrong_doc", kmax)
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
            cells = [cell for cell in (row[j] for row in matrix) if cell is not None]
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
        mode = report.retrieval.get("mode", "dense")
        sentences.append("The embedder never reads " + _names(parts) + " embedded text (past its input limit)"
                         + ("; BM25 reads all of it." if mode in ("bm25", "hybrid") else "."))
    return sentences


def unread_shares(report: BenchReport) -> dict[str, float]:
    """The unread share of every chunker that has one."""
    return {spec: r.unread_share for spec, r in report.results.items() if r.unread_share is not None}
