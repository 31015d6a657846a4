"""Metrics are read by name, not by a string key: the app's pages and components, the outputs and the workbench
ask a report for a metric at a cut-off (`ChunkerReport.at("hit", 1)`, `MetricAt("hit", 1)`), and only
`core.evaluation.metric_at` spells the "<metric>@<k>" key a report file holds. A key-shaped string (`"hit@1"`,
`f"hit@{k}"`, `f"{m}@{k}"`) may still head a column (a dict key, a table's label); used to look a value up (an
index, a call's argument, a list of keys) it is a read. The bench's own studies keep a handful, counted here."""

from __future__ import annotations

import ast
import re

from tests.support.data import ROOT

#: the folders that read metrics by name only
BY_NAME = ["pages", "components", "core/outputs", "core/workbench", "app.py"]
#: the bench's study scripts may keep at most this many reads by key (python -m bench.* over committed studies)
BENCH_READS_ALLOWED = 5
METRICS = ("hit", "mrr", "ndcg", "dcg", "recall", "span_recall", "span_precision", "span_iou", "wrong_doc", "judged")
KEY = re.compile(rf"^({'|'.join(METRICS)})@\d+$")


def _key_shaped(node: ast.AST) -> bool:
    """"hit@1", f"hit@{k}" or f"{m}@{k}": a whole string that is a metric's key in a report."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(KEY.match(node.value))
    if not isinstance(node, ast.JoinedStr):
        return False
    parts = node.values
    if len(parts) == 2 and isinstance(parts[0], ast.Constant) and isinstance(parts[1], ast.FormattedValue):
        return isinstance(parts[0].value, str) and bool(re.fullmatch(rf"({'|'.join(METRICS)})@", parts[0].value))
    return (len(parts) == 3 and isinstance(parts[0], ast.FormattedValue) and isinstance(parts[2], ast.FormattedValue)
            and isinstance(parts[1], ast.Constant) and parts[1].value == "@")


def key_reads(source: str) -> list[int]:
    """The lines where a key-shaped string looks a value up: an index (`r["hit@1"]`), a call's argument
    (`closest_gap(report, "hit@1")`, `.get(f"hit@{k}")`), or an element of a list, tuple or set of keys passed to a
    call or named (`interval_rows(report, ["hit@1"])`, `METRICS = ("hit@1", ...)`). Dict keys (a row's column
    heading) and strings inside a comprehension's label are not reads. A subscript being assigned to is a write."""
    lines = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        found: list[ast.AST] = []
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            found.append(node.slice)
        elif isinstance(node, ast.Call):
            args = [*node.args, *(kw.value for kw in node.keywords)]
            found += args
            found += [e for a in args if isinstance(a, ast.List | ast.Tuple | ast.Set) for e in a.elts]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            named = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            found += [e for v in named if isinstance(v, ast.List | ast.Tuple | ast.Set) for e in v.elts]
        lines += [n.lineno for n in found if _key_shaped(n)]
    return sorted(lines)


def _reads_in(where: str) -> list[str]:
    path = ROOT / where
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [f"{file.relative_to(ROOT)}:{line}" for file in files
            for line in key_reads(file.read_text(encoding="utf-8"))]


def test_the_check_sees_a_read_and_not_a_heading():
    reads = key_reads('r["hit@1"]\nahead_of(report, f"hit@{k}")\nrows(report, ["hit@1", "mrr@10"])\n'
                      'M = ("hit@1",)\nr.get(f"{m}@{k}")\nms = ["hit@1"] if k else ["mrr@1"]\n')
    assert reads == [1, 2, 3, 3, 4, 5, 6, 6]
    shown = ('row = {"hit@1": r.at("hit", 1)}\nlabel = f"{metric}@{k}"\nst.caption("judged@k: the share")\n'
             'cols = [(f"{m}@{k}", at(m, k)) for m in ms]\nscores[f"hit@{k}"] = found\nf"Best by hit@{k}: x"\n')
    assert key_reads(shown) == []


def test_pages_components_outputs_and_workbench_read_no_metric_by_key():
    assert [read for where in BY_NAME for read in _reads_in(where)] == []


def test_the_bench_keeps_at_most_a_handful_of_reads_by_key():
    reads = _reads_in("bench")
    assert len(reads) <= BENCH_READS_ALLOWED, reads


def test_the_check_covers_every_folder_it_names():
    assert [where for where in [*BY_NAME, "bench"] if not (ROOT / where).exists()] == []


def test_a_metric_at_k_spells_its_key_once_and_reads_a_result_by_name():
    from core.evaluation.metric_at import MetricAt, ScoreKey, figure_text, interval_text, key_of
    from core.evaluation.results import BenchReport

    hit_1 = MetricAt("hit", 1)
    assert hit_1.key == str(hit_1) == "hit@1" and MetricAt.parse("wrong_doc@10") == MetricAt("wrong_doc", 10)
    assert MetricAt("wrong_doc", 10).lower_is_better and not hit_1.lower_is_better
    assert [MetricAt.parse(k) for k in ("span_precision_omega", "hit@0", "hits@1", "hit@1x")] == [None] * 4
    assert key_of(ScoreKey("span_precision_omega")) == "span_precision_omega" and key_of(hit_1) == "hit@1"
    report = BenchReport.of({"k": [1], "results": {
        "a": {"hit@1": 0.5, "mrr@1": 0.5, "hit@1_ci95": [0.25, 0.75]}, "b": {"hit@1": 1.0, "mrr@1": 1.0}}})
    a, b = report.results["a"], report.results["b"]
    assert (hit_1.of(a), hit_1.interval_of(a), hit_1.interval_of(b)) == (0.5, (0.25, 0.75), None)
    assert [figure_text(a, hit_1), figure_text(b, hit_1), figure_text(a, MetricAt("ndcg", 1))] == [
        "0.500 [0.25, 0.75]", "1.000", "-"]
    assert [interval_text(a, hit_1), interval_text(b, hit_1)] == ["[0.25, 0.75]", "-"]
