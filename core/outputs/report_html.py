"""One self-contained HTML file of a bench report, to show a comparison after the app is closed.

`render_html` turns the dict `python -m core bench` writes (core/evaluation/bench.py), or a list of them, into
one page: the settings and versions, "What this shows" (sentences generated from the numbers), the tables, and
the app's Plotly figures (core/outputs/figures.py) as interactive figures with plotly.js embedded once, so the
file opens offline. Every text that comes from documents, specs or dataset names is escaped. The same input
gives the same bytes: the figures get fixed ids and nothing depends on the clock unless `generated` is passed.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import core
from core.evaluation.report import metric_cell, pair_lines, retrieval_phrase
from core.evaluation.verdicts import compared_metrics, interval_rows, lower_is_better, pair_matrix
from core.infra.errors import ChunkLensError
from core.outputs.report_summary import (
    Report,
    check_report,
    collisions_of,
    number_or_none,
    summary_sentences,
    unread_shares,
    values_of,
)

RANK_METRICS = ("hit", "mrr", "ndcg")
STAGES = ("chunk", "embed", "index", "query", "lexical")
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
#: the figures' Plotly template: named, so the file looks the same whether made in the app or on the command line
TEMPLATE = "plotly_white"

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111827; margin: 0;
       background: #f9fafb; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { margin: 0 0 4px; font-size: 1.7em; } h2 { margin-top: 2.2em; border-bottom: 2px solid #e5e7eb; }
h3 { margin-top: 1.8em; }
.meta, .note, footer { color: #6b7280; font-size: 0.9em; }
.summary { background: #eff6ff; border-left: 4px solid #2563eb; padding: 10px 16px; line-height: 1.5; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.9em; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: right; vertical-align: top; }
th { background: #f3f4f6; } td.name, th.name, td.text, th.text, table.settings td { text-align: left; }
td.text { overflow-wrap: anywhere; max-width: 32em; }
table.settings th { text-align: left; width: 12em; }
code { font-size: 0.95em; } td strong { color: #1d4ed8; }
.figure { margin: 8px 0 20px; }
dt { font-weight: 600; } dd { margin: 0 0 6px 1.5em; }
"""

GLOSSARY = [
    ("hit@k", "share of the questions with a relevant chunk (one overlapping a gold span) in the top k"),
    ("mrr@k", "mean reciprocal rank of the first relevant chunk in the top k (0 when there is none)"),
    ("ndcg@k", "normalised discounted cumulative gain of the top k (binary relevance)"),
    ("span recall@k / span IoU@k", "share of the gold characters the top k covers / overlap of the retrieved and "
                                   "gold characters over their union"),
    ("wrong_doc@k", "share of the top k that comes from a document holding none of the question's gold spans"),
    ("unread share", "share of the embedded text past the embedder's input limit, which its vector never reads"),
    ("top-1 collisions", "per chunker and document: the share of the questions about that document whose first "
                         "hit comes from another document"),
]


def escape(value: Any) -> str:
    """Text for HTML (quotes too: it also goes into attributes)."""
    return html.escape(str(value))


def plotly_label(value: Any) -> str:
    """A text for a Plotly label: plotly.js reads labels as pseudo-HTML and turns entities back into characters,
    so escaping shows the text as it is (and no tag of a spec or document name takes effect)."""
    return html.escape(str(value), quote=False)


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:.{digits}f}" if abs(value) < 100 else f"{value:,.0f}"
    return escape(value)


def _retrieval(report: Report) -> str:
    retrieval = report.get("retrieval")
    if retrieval is None or isinstance(retrieval, Mapping):
        return retrieval_phrase(dict(report))
    return str(retrieval)


# --- tables ------------------------------------------------------------------------------------------------------

Column = tuple[str, Callable[[Mapping[str, Any]], Any], str]  # header, getter, "max" | "min" | "" (best marked)


def _table(report: Report, columns: Sequence[Column], caption: str = "") -> str:
    results = report["results"]
    rows = [[get(r) for _, get, _ in columns] for r in results.values()]
    best: list[set[int]] = []
    for j, (_, _, better) in enumerate(columns):
        numbers = [(i, number_or_none(row[j])) for i, row in enumerate(rows)]
        numbers = [(i, v) for i, v in numbers if v is not None]
        if not better or len(numbers) < 2 or len({round(v, 9) for _, v in numbers}) < 2:
            best.append(set())
            continue
        target = (max if better == "max" else min)(v for _, v in numbers)
        best.append({i for i, v in numbers if math.isclose(v, target, abs_tol=1e-9)})
    out = ["<table>" + (f"<caption class='note'>{escape(caption)}</caption>" if caption else ""),
           "<thead><tr><th class='name'>chunker</th>"
           + "".join(f"<th class='text'>{escape(h)}</th>" if any(isinstance(row[j], str) for row in rows)
                     else f"<th>{escape(h)}</th>" for j, (h, _, _) in enumerate(columns)) + "</tr></thead><tbody>"]
    for i, (spec, row) in enumerate(zip(results, rows)):
        cells = []
        for j, (header, _, _) in enumerate(columns):
            text = _cell(row[j], 2 if header.startswith("seconds") else 3)
            text = f"<strong>{text}</strong>" if i in best[j] else text
            cells.append(f"<td class='text'>{text}</td>" if isinstance(row[j], str) else f"<td>{text}</td>")
        out.append(f"<tr><td class='name'><code>{escape(spec)}</code></td>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _has(report: Report, key: str) -> bool:
    return any(number_or_none(r.get(key)) is not None for r in report["results"].values())


def _get(key: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda r: number_or_none(r.get(key))


def _rounded(value: Any) -> int | None:
    number = number_or_none(value)
    return None if number is None else round(number)


def _settings_table(report: Report, generated: str | None) -> str:
    retrieval = report.get("retrieval") if isinstance(report.get("retrieval"), Mapping) else {}
    details = ", ".join(f"{k} {v}" for k, v in retrieval.items() if k not in ("mode", "lexical"))
    documents = _cell(report.get("n_documents")) + (" (joined into one stream)" if report.get("joined") else "")
    questions = _cell(report.get("n_questions")) + (" (product-named)" if report.get("qualify_queries") else "")
    rows = [("ChunkLens", core.__version__), ("dataset", report.get("dataset", "–")),
            ("documents", None), ("questions", None), ("k", ", ".join(str(k) for k in report["k"])),
            ("embedder", report.get("embedder", "–")), ("retrieval", _retrieval(report)),
            ("retrieval settings", details or "–")]
    if retrieval.get("lexical"):
        rows.append(("lexical index", retrieval["lexical"]))
    if generated:
        rows.append(("generated", generated))
    cells = []
    for name, value in rows:
        text = documents if name == "documents" else questions if name == "questions" else escape(value)
        cells.append(f"<tr><th>{escape(name)}</th><td>{text}</td></tr>")
    return "<table class='settings'>\n" + "\n".join(cells) + "\n</table>"


def _chunker_table(report: Report) -> str:
    results = report["results"].values()
    columns: list[Column] = [("config", lambda r: r.get("config"), ""), ("chunks", lambda r: r.get("n_chunks"), ""),
                             ("children", lambda r: r.get("n_children"), ""),
                             ("mean tokens", lambda r: _rounded(r.get("mean_chunk_tokens")), "")]
    if any(r.get("llm") for r in results):
        columns.append(("CNM backend", lambda r: r.get("llm"), ""))
    if any(r.get("scorer") for r in results):
        columns.append(("scorer", lambda r: r.get("scorer"), ""))
    if _has(report, "boundary_f1"):
        columns.append(("boundary F1", _get("boundary_f1"), "max"))
    return _table(report, columns)


def _rank_table(report: Report) -> str:
    columns: list[Column] = [(f"{m}@{k}", _get(f"{m}@{k}"), "max") for m in RANK_METRICS for k in report["k"]
                             if m != "ndcg" or _has(report, f"ndcg@{k}")]
    return _table(report, columns, "best value of each column in bold")


def _span_table(report: Report) -> str:
    columns: list[Column] = []
    for prefix, label, better in (("span_recall", "span recall", "max"), ("span_iou", "span IoU", "max"),
                                  ("wrong_doc", "wrong_doc", "min")):
        columns += [(f"{label}@{k}", _get(f"{prefix}@{k}"), better) for k in report["k"]
                    if _has(report, f"{prefix}@{k}")]
    if unread_shares(report):
        columns.append(("unread share", _get("unread_share"), ""))
    return _table(report, columns, "span metrics: higher is better; wrong_doc: lower is better") if columns else ""


def _stages(report: Report) -> list[str]:
    seen = {s for r in report["results"].values() if isinstance(r.get("seconds"), Mapping) for s in r["seconds"]}
    return [s for s in STAGES if s in seen] + sorted(seen - set(STAGES))


def _seconds_of(r: Mapping[str, Any]) -> Mapping[str, Any]:
    return r["seconds"] if isinstance(r.get("seconds"), Mapping) else {}


def _seconds(stage: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda r: number_or_none(_seconds_of(r).get(stage))


def _cost_table(report: Report) -> str:
    stages = _stages(report)
    if not stages:
        return ""
    columns: list[Column] = [(f"seconds {s}", _seconds(s), "") for s in stages]
    columns.append(("seconds total",
                    lambda r: sum(v for v in _seconds_of(r).values() if number_or_none(v) is not None), ""))
    if any(r.get("llm_calls") for r in report["results"].values()):
        columns.append(("LLM calls", lambda r: r.get("llm_calls"), ""))
    return _table(report, columns, "cached stages take next to no time")


def _interval_table(report: Report) -> str:
    """The headline metrics as "0.540 [0.40, 0.68]": each figure with its 95 % bootstrap interval."""
    metrics = compared_metrics(report)
    if not metrics:
        return ""
    columns: list[Column] = [(m, (lambda r, m=m: metric_cell(r, m)), "") for m in metrics]
    return _table(report, columns, "each figure with its 95 % interval (bootstrap over the questions)")


def _pair_list(report: Report) -> str:
    lines = pair_lines(report)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line.replace('`', ''))}</li>" for line in lines[1:])
    return f"<p>{escape(lines[0])}</p><ul class='pairs'>{items}</ul>"


def _answer_table(report: Report) -> str:
    if not _has(report, "answer_f1"):
        return ""
    return _table(report, [("answer token F1", _get("answer_f1"), "max"),
                           ("answer ROUGE-L", _get("answer_rouge_l"), "max"),
                           ("answers scored", lambda r: r.get("answers_scored"), "")])


# --- figures -----------------------------------------------------------------------------------------------------

class Figures:
    """Figures as HTML fragments with fixed ids; plotly.js goes inline with the first one only."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, fig: Any) -> str:
        import plotly.io as pio

        self.count += 1
        fig.update_layout(template=TEMPLATE)  # never the app's: Streamlit's template holds colour placeholders
        body = pio.to_html(fig, full_html=False, include_plotlyjs=self.count == 1, div_id=f"figure-{self.count}",
                           config=PLOTLY_CONFIG, default_height=f"{fig.layout.height or 400}px")
        return f"<div class='figure'>{body}</div>"


def _figure_view(report: Report) -> dict[str, Any]:
    """The report with every chunker spec escaped for Plotly's labels (the numbers untouched)."""
    return {**report, "results": {plotly_label(spec): r for spec, r in report["results"].items()}}


def _pairs_view(report: Report) -> dict[str, Any]:
    """`_figure_view` for the paired comparisons: their chunker names escaped the same way."""
    pairs = [{**p, "a": plotly_label(p["a"]), "b": plotly_label(p["b"])} for p in report.get("pairs") or []]
    return {**_figure_view(report), "pairs": pairs}


def _figures(report: Report, draw: Figures) -> dict[str, str]:
    from core.outputs import figures

    view = _figure_view(report)
    ks = report["k"]
    kmax = max(ks)
    out = {"rank": "".join(draw(figures.metric_vs_k(view, m, TEMPLATE)) for m in RANK_METRICS
                           if all(values_of(report, f"{m}@{k}") for k in ks))}
    if values_of(report, f"span_iou@{kmax}") and values_of(report, f"span_recall@{kmax}"):
        out["span"] = draw(figures.bars(view, {f"span IoU@{kmax}": _get(f"span_iou@{kmax}"),
                                               f"span recall@{kmax}": _get(f"span_recall@{kmax}")}, "Span metrics",
                                         TEMPLATE))
    chunkers, docs, matrix = collisions_of(report)
    if chunkers and docs:
        out["heatmap"] = draw(figures.collision_heatmap(chunkers, docs, matrix))  # it escapes the names
    wrong = [k for k in ks if values_of(report, f"wrong_doc@{k}")]
    if wrong:
        out["wrong_doc"] = draw(figures.bars(view, {f"wrong_doc@{k}": _get(f"wrong_doc@{k}") for k in wrong},
                                             "Collisions: share of the top k from a document without the answer",
                                             TEMPLATE))
    metrics = compared_metrics(report)
    shown = interval_rows(view, [m for m in metrics if not lower_is_better(m)])
    if shown:
        out["intervals"] = draw(figures.interval_chart(shown, "Headline metrics with their 95 % intervals",
                                                       TEMPLATE))
    matrix = pair_matrix(_pairs_view(report), metrics[0]) if metrics else None
    if matrix is not None:
        out["pairs"] = draw(figures.pair_matrix(matrix, TEMPLATE))
    stages = [s for s in _stages(report) if s != "lexical"]
    if stages:
        out["seconds"] = draw(figures.bars(view, {s: (lambda r, s=s: _seconds(s)(r) or 0.0) for s in stages},
                                           "Seconds per stage", TEMPLATE))
    return out


# --- the page ----------------------------------------------------------------------------------------------------

def _section(report: Report, index: int, draw: Figures, generated: str | None, heading: bool) -> str:
    figs = _figures(report, draw)
    paragraph = " ".join(summary_sentences(report))
    parts = [f"<section class='report' id='report-{index}'>"]
    if heading:
        parts.append(f"<h2>{escape(report.get('dataset', f'report {index}'))}</h2>")
    parts += [f"<section class='summary' id='summary-{index}'><h3>What this shows</h3><p>{escape(paragraph)}</p>"
              "</section>",
              "<h3>Settings and versions</h3>", _settings_table(report, generated),
              "<h3>Chunkers</h3>", _chunker_table(report),
              "<h3>Retrieval quality</h3>", _rank_table(report), figs.get("rank", "")]
    intervals = _interval_table(report)
    if intervals:
        parts += ["<h3>Is the difference real?</h3>", intervals, figs.get("intervals", ""), _pair_list(report),
                  figs.get("pairs", "")]
    spans = _span_table(report)
    if spans or "heatmap" in figs:
        parts += ["<h3>Spans and collisions</h3>", spans, figs.get("span", ""), figs.get("heatmap", ""),
                  figs.get("wrong_doc", "")]
        if "heatmap" not in figs:
            parts.append("<p class='note'>No per-question sources in this report: no top-1 collision heat-map.</p>")
    answers = _answer_table(report)
    if answers:
        parts += ["<h3>Generated answers</h3>", answers]
    costs = _cost_table(report)
    if costs:
        parts += ["<h3>Time</h3>", costs, figs.get("seconds", "")]
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def render_html(reports: Report | Sequence[Report], title: str | None = None, generated: str | None = None) -> str:
    """The whole HTML file of one bench report or a list of them (one section each). `generated` (say a date) is
    shown only when given, so the same input gives the same file."""
    items = [reports] if isinstance(reports, Mapping) else list(reports)
    if not items:
        raise ChunkLensError("not a bench report (an empty list)")
    for i, r in enumerate(items):
        check_report(r, "report" if len(items) == 1 else f"report {i + 1}")
    datasets = ", ".join(str(r.get("dataset", "?")) for r in items)
    title = title or f"ChunkLens comparison: {datasets}"
    draw = Figures()
    sections = [_section(r, i + 1, draw, generated, len(items) > 1) for i, r in enumerate(items)]
    return page_html(title, f"{len(items)} bench report{'s' if len(items) > 1 else ''}", sections,
                     "a <code>python -m core bench</code> report", generated)


def page_html(title: str, what: str, sections: Sequence[str], source: str, generated: str | None = None) -> str:
    """The HTML file around `sections` (HTML made by this module's helpers): title, a line on `what` it holds,
    the glossary, and a footer naming its `source` (HTML)."""
    glossary = "".join(f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>" for term, text in GLOSSARY)
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<meta name='generator' content='ChunkLens " + escape(core.__version__) + "'>",
        f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>", "<main>",
        f"<h1>{escape(title)}</h1>",
        f"<p class='meta'>ChunkLens {escape(core.__version__)} · {escape(what)}"
        + (f" · generated {escape(generated)}" if generated else "")
        + " · the figures are interactive (hover, zoom, click a legend entry to hide it)</p>",
        *sections,
        "<h2>How to read the numbers</h2>", f"<dl>{glossary}</dl>",
        f"<footer>Made by ChunkLens {escape(core.__version__)} from {source}; "
        "the file holds everything it shows and needs no network.</footer>",
        "</main>", "</body>", "</html>", ""])


def rows_table(rows: Mapping[str, Mapping[str, Any]], columns: Sequence[tuple[str, str, str | None]],
               caption: str = "") -> str:
    """A table of one row per chunker from plain dicts: columns are (header, key, "max" / "min" / None: which
    value is best and set in bold)."""
    return _table({"results": rows}, [(header, _get(key), better) for header, key, better in columns], caption)


def settings_table(settings: Mapping[str, Any]) -> str:
    """Name / value rows (settings and versions)."""
    return "<table class='settings'>" + "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in settings.items()) + "</table>"
