"""What a report's intervals and paired tests say (`core.evaluation.verdicts`), and where they are shown: the
interval chart and the pairwise matrix (`core.outputs.figures`), the HTML report's "Is the difference real?"
section and its summary sentence. The reports are built from per-question scores with the bench's own interval
and pair code."""

from __future__ import annotations

import json

import numpy as np

from core.evaluation.bench import with_intervals
from core.evaluation.metric_at import MetricAt
from core.evaluation.report import pair_lines
from core.evaluation.results import BenchReport
from core.evaluation.significance import compare, headline_metrics
from core.evaluation.verdicts import ahead_of, better_first, closest_gap, gain, interval_rows, pair_matrix
from core.outputs import figures
from core.outputs.report_html import render_html
from core.outputs.report_summary import summary_sentences

N = 56


def _scores(rate: float, seed: int) -> list[float]:
    return (np.random.default_rng(seed).random(N) < rate).astype(float).tolist()


def report_of(per_chunker: dict[str, dict[str, list[float]]]) -> dict:
    """A bench report as core.evaluation.bench makes it, from per-question scores (k = 1 and 10)."""
    results = {}
    for spec, per_question in per_chunker.items():
        results[spec] = {**{m: float(np.mean(v)) for m, v in per_question.items()}, **with_intervals(per_question),
                         "per_question": per_question, "n_chunks": 10, "mean_chunk_tokens": 100.0,
                         "seconds": {"chunk": 0.1, "embed": 0.1, "index": 0.1, "query": 0.1}}
    pairs = compare({s: r["per_question"] for s, r in results.items()}, headline_metrics([1, 10], False))
    return {"dataset": "synthetic", "n_documents": 3, "n_questions": N, "k": [1, 10], "qids": [f"q{i}" for i in
                                                                                               range(N)],
            "results": results, "pairs": [p.to_json() for p in pairs]}


def three_chunkers() -> dict:
    """`strong` finds far more at 1 than `weak`; `weak` and `twin` differ by a question or two."""
    weak, twin = _scores(0.2, 1), _scores(0.2, 1)
    twin[0] = 1.0 - twin[0]
    per = {}
    for name, hit1, wrong in (("strong", _scores(0.8, 2), _scores(0.1, 5)), ("weak", weak, _scores(0.6, 6)),
                              ("twin", twin, _scores(0.6, 6))):
        per[name] = {"hit@1": hit1, "hit@10": [max(h, x) for h, x in zip(hit1, _scores(0.7, 3))],
                     "mrr@1": hit1, "mrr@10": hit1, "wrong_doc@10": wrong}
    return report_of(per)


def test_ahead_of_names_only_real_differences_and_turns_wrong_doc_around():
    report = three_chunkers()
    ahead = ahead_of(report, MetricAt("hit", 1))
    assert ahead == {"strong": ["weak", "twin"], "weak": [], "twin": []}
    wrong = ahead_of(report, MetricAt("wrong_doc", 10))  # strong collides less: it is the one ahead
    assert wrong["strong"] == ["weak", "twin"] and wrong["weak"] == [] == wrong["twin"]
    pair = next(p for p in report["pairs"] if p["metric"] == "wrong_doc@10" and p["a"] == "strong")
    assert pair["diff"] < 0 and better_first(pair) == ("strong", pair["b"])


def test_the_gain_is_positive_whichever_side_is_better_and_whichever_way_the_metric_points():
    for metric, a_value, b_value in (("hit@1", 0.8, 0.5), ("hit@1", 0.5, 0.8), ("wrong_doc@10", 0.1, 0.4),
                                     ("wrong_doc@10", 0.4, 0.1)):
        diff = a_value - b_value
        pair = {"a": "a", "b": "b", "metric": metric, "diff": diff, "ci95": [diff - 0.1, diff + 0.1]}
        by, low, high = gain(pair)
        assert by == abs(diff) and (low, high) == (abs(diff) - 0.1, abs(diff) + 0.1)
    report = three_chunkers()
    line = next(line for line in pair_lines(BenchReport.of(report)) if line.startswith("wrong_doc@10"))
    assert "`strong` > `weak` (by 0." in line  # never a negative 'by'


def test_the_pair_matrix_is_antisymmetric_and_marks_both_cells_of_a_real_difference():
    report = three_chunkers()
    matrix = pair_matrix(report, MetricAt("hit", 1))
    assert matrix is not None and matrix.chunkers == ["strong", "weak", "twin"]
    for i in range(3):
        assert matrix.gain[i][i] is None
        for j in range(3):
            if i != j:
                assert matrix.gain[i][j] == -matrix.gain[j][i] and matrix.marked[i][j] == matrix.marked[j][i]
    assert matrix.gain[0][1] > 0.4 and matrix.marked[0][1] and not matrix.marked[1][2]
    assert "reliably apart" in matrix.hover[0][1] and "within noise" in matrix.hover[1][2]
    wrong = pair_matrix(report, MetricAt("wrong_doc", 10))
    assert wrong is not None and wrong.gain[0][1] > 0  # "row better by": fewer collisions is better
    assert pair_matrix({"results": report["results"]}, MetricAt("hit", 1)) is None  # a report from before intervals


def test_the_closest_gap_says_how_many_questions_would_settle_it():
    report = three_chunkers()
    top = closest_gap(report, MetricAt("hit", 1))
    assert top is not None and top.leader == "strong" and top.settled
    assert "reliably ahead" in top.sentence()
    close = closest_gap({**report, "results": {s: report["results"][s] for s in ("weak", "twin")}}, MetricAt("hit", 1))
    assert close is not None and not close.settled and close.n == N
    assert close.needed is not None and close.needed > N and close.more == close.needed - N
    assert close.detectable > abs(close.diff)  # these questions cannot see a one-question gap
    assert f"{close.needed} in all ({close.more} more)" in close.sentence()
    same = report_of({"a": {"hit@1": _scores(0.5, 9)}, "b": {"hit@1": _scores(0.5, 9)}})
    tied = closest_gap(same, MetricAt("hit", 1))
    assert tied is not None and tied.needed is None and "cannot tell them apart" in tied.sentence("judged questions")


def test_the_interval_chart_draws_every_interval_around_its_figure():
    report = three_chunkers()
    rows = interval_rows(report, [MetricAt("hit", 1), MetricAt("hit", 10)])
    assert len(rows) == 6 and all(r.low <= r.value <= r.high for r in rows)
    fig = figures.interval_chart(rows, "t")
    assert [t.name for t in fig.data] == ["hit@1", "hit@10"]
    for trace in fig.data:
        assert all(up >= 0 for up in trace.error_x.array) and all(down >= 0 for down in trace.error_x.arrayminus)
    matrix = figures.pair_matrix(pair_matrix(report, MetricAt("hit", 1)))
    text = matrix.data[0].text
    assert text[0][1].endswith("★") and not text[1][2].endswith("★") and text[0][0] == ""


def test_the_html_report_says_whether_a_difference_is_real():
    report = json.loads(json.dumps(three_chunkers()))  # as read back from a file
    html = render_html(report)
    assert "<h3>Is the difference real?</h3>" in html and "Reliably apart" in html
    row = next(line for line in html.splitlines() if line.startswith("<tr><td class='name'><code>strong</code>")
               and "[" in line)
    low, high = report["results"]["strong"]["hit@1_ci95"]
    assert f"{report['results']['strong']['hit@1']:.3f} [{low:.2f}, {high:.2f}]" in row
    assert any("reliably ahead" in s for s in summary_sentences(report))
    old = {k: v for k, v in report.items() if k not in ("pairs", "qids")}
    old["results"] = {s: {k: v for k, v in r.items() if k != "per_question" and not k.endswith("_ci95")}
                      for s, r in report["results"].items()}
    assert "Is the difference real?" not in render_html(old)  # a report from before intervals still renders


def small_report(hits: dict[str, list[float]]) -> dict:
    """A report of hit@1 alone over however many questions the lists hold."""
    n = len(next(iter(hits.values())))
    results = {spec: {"hit@1": float(np.mean(v)) if n else 0.0, **with_intervals({"hit@1": v}),
                      "per_question": {"hit@1": v}} for spec, v in hits.items()}
    pairs = compare({s: r["per_question"] for s, r in results.items()}, ["hit@1"])
    return {"n_questions": n, "k": [1], "results": results, "pairs": [p.to_json() for p in pairs]}


def test_a_chunker_ahead_on_every_judged_question_is_said_to_be_ahead_not_the_same():
    """Issue 50: one chunker won both judged questions and the verdict said they 'score the same' (interval
    [1.00, 1.00], p 0.49). The difference is the same on every question, which is no tie."""
    for n in (1, 2, 3, 5):
        report = small_report({"won": [1.0] * n, "lost": [0.0] * n})
        gap = closest_gap(report, MetricAt("hit", 1))
        assert gap is not None and (gap.leader, gap.runner_up, gap.diff) == ("won", "lost", 1.0)
        text = gap.sentence("judged questions")
        assert "score the same" not in text and "won is ahead of lost" in text
        assert gap.every and not gap.settled and gap.p == 2.0 ** (1 - n)
        assert ("on the only judged question" if n == 1 else f"on every one of the {n} judged questions") in text
        assert f"p = {2.0 ** (1 - n):.2g}" in text and f"about 6 in all ({6 - n} more)" in text
    report = small_report({"won": [1.0] * 6, "lost": [0.0] * 6})
    gap = closest_gap(report, MetricAt("hit", 1))
    assert gap is not None and gap.settled and "reliably ahead" in gap.sentence() and "ahead on each" in gap.sentence()
    hover = pair_matrix(report, MetricAt("hit", 1)).hover[0][1]
    assert "[+1.00, +1.00] (the same on every question)" in hover


def test_fewer_collisions_on_every_question_is_ahead_too():
    report = small_report({"a": [0.0] * 3, "b": [1.0] * 3})
    report = {**report, "results": {s: {**r, "wrong_doc@1": r["hit@1"],
                                        "per_question": {"wrong_doc@1": r["per_question"]["hit@1"]}}
                                    for s, r in report["results"].items()},
              "pairs": [{**p, "metric": "wrong_doc@1"} for p in report["pairs"]]}
    gap = closest_gap(report, MetricAt("wrong_doc", 1))
    assert gap is not None and gap.leader == "a" and "a is ahead of b on every one" in gap.sentence() and gap.every


def test_the_other_degenerate_gaps_all_the_same_a_tie_on_average_and_no_question():
    same = closest_gap(small_report({"a": [1.0, 0.0, 1.0], "b": [1.0, 0.0, 1.0]}), MetricAt("hit", 1))
    assert same is not None and "a and b score the same on every one of the 3 questions" in same.sentence()
    tie = closest_gap(small_report({"a": [1.0, 0.0], "b": [0.0, 1.0]}), MetricAt("hit", 1))
    assert tie is not None and tie.needed is None and "score the same" not in tie.sentence()
    assert "have the same mean over the 2 questions, each ahead on some" in tie.sentence() and not tie.every
    one = closest_gap(small_report({"a": [1.0], "b": [1.0]}), MetricAt("hit", 1))
    assert one is not None and "score the same on the only question" in one.sentence()
    assert closest_gap(small_report({"a": [], "b": []}), MetricAt("hit", 1)) is None  # nothing to say of no question
    assert same.p == 1.0
