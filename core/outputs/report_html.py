"""One self-contained HTML file of a bench report, to show a comparison after the app is closed.

`render_html` turns the dict `python -m core bench` writes (core/evaluation/bench.py, read through
`core.evaluation.results.BenchReport`), or a list of them, into
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
from core.chunkers.registry import make_chunker
from core.evaluation.fields import shown_fields
from core.evaluation.report import metric_cell, pair_lines, retrieval_phrase
from core.evaluation.results import BenchReport, ChunkerReport, Metric, number_or_none
from core.evaluation.verdicts import compared_metrics, interval_rows, lower_is_better, pair_matrix
from core.infra.errors import ChunkLensError
from core.outputs.report_summary import collisions_of, summary_sentences, unread_shares, view_of

Report = Mapping[str, Any]  # a bench report as `python -m core bench` writes it (read through `BenchReport`)

RANK_METRICS: tuple[Metric, ...] = ("hit", "mrr", "ndcg")
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
pre.snippet { background: #f3f4f6; border: 1px solid #e5e7eb; padding: 10px 14px; overflow-x: auto; font-size: 0.9em; }
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


def _retrieval(report: BenchReport) -> str:
    return report.retrieval_in_words or retrieval_phrase(report)


# --- tables ------------------------------------------------------------------------------------------------------

Column = tuple[str, Callable[[ChunkerReport], Any], str]  # header, getter, "max" | "min" | "" (best marked)


def _table(results: Mapping[str, ChunkerReport], columns: Sequence[Column], caption: str = "") -> str:
    rows = [[get(r) for _, get, _ in columns] for r in results.values()]
    best: list[set[int]] = []
    for j, (_, _, better) in enumerate(columns):
        read = [(i, number_or_none(row[j])) for i, row in enumerate(rows)]
        numbers = [(i, v) for i, v in read if v is not None]
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


def _at(metric: Metric, k: int) -> Callable[[ChunkerReport], float | None]:
    return lambda r: r.at(metric, k)


def _cell_of(metric: str) -> Callable[[ChunkerReport], str]:
    return lambda r: metric_cell(r, metric)


def _stage_seconds(stage: str) -> Callable[[ChunkerReport], float]:
    return lambda r: r.seconds.get(stage) or 0.0


def _rounded(value: float | None) -> int | None:
    return None if value is None else round(value)


def _settings_table(report: BenchReport, generated: str | None) -> str:
    retrieval = report.retrieval
    details = ", ".join(f"{k} {v}" for k, v in retrieval.items() if k not in ("mode", "lexical"))
    documents = _cell(report.n_documents) + (" (joined into one stream)" if report.joined else "")
    questions = _cell(report.n_questions) + (" (product-named)" if report.qualify_queries else "")
    rows = [("ChunkLens", core.__version__), ("dataset", report.dataset or "–"),
            ("documents", None), ("questions", None), ("k", ", ".join(str(k) for k in report.ks)),
            ("embedder", report.embedder or "–"), ("retrieval", _retrieval(report)),
            ("retrieval settings", details or "–")]
    if retrieval.get("lexical"):
        rows.append(("lexical index", str(retrieval["lexical"])))
    if generated:
        rows.append(("generated", generated))
    cells = []
    for name, value in rows:
        text = documents if name == "documents" else questions if name == "questions" else escape(value)
        cells.append(f"<tr><th>{escape(name)}</th><td>{text}</td></tr>")
    return "<table class='settings'>\n" + "\n".join(cells) + "\n</table>"


def _chunker_table(report: BenchReport) -> str:
    results = report.results.values()
    columns: list[Column] = [("config", lambda r: r.config, ""), ("chunks", lambda r: r.n_chunks, ""),
                             ("children", lambda r: r.n_children, ""),
                             ("mean tokens", lambda r: _rounded(r.mean_chunk_tokens), "")]
    if any(r.llm for r in results):
        columns.append(("CNM backend", lambda r: r.llm, ""))
    if any(r.scorer for r in results):
        columns.append(("scorer", lambda r: r.scorer, ""))
    for show in shown_fields():  # the methods' headline fields (CHOP's boundary F1) where some chunker has one
        if show.headline and any(r.number(show.key) is not None for r in results):
            columns.append((show.label, _number_of(show.key), show.better))
    return _table(report.results, columns)


def _number_of(key: str) -> Callable[[ChunkerReport], float | None]:
    return lambda r: r.number(key)


def _rank_table(report: BenchReport) -> str:
    columns: list[Column] = [(f"{m}@{k}", _at(m, k), "max") for m in RANK_METRICS for k in report.ks
                             if m != "ndcg" or report.has("ndcg", k)]
    return _table(report.results, columns, "best value of each column in bold")


def _span_table(report: BenchReport) -> str:
    columns: list[Column] = []
    metrics: tuple[tuple[Metric, str, str], ...] = (("span_recall", "span recall", "max"),
                                                     ("span_iou", "span IoU", "max"), ("wrong_doc", "wrong_doc", "min"))
    for metric, label, better in metrics:
        columns += [(f"{label}@{k}", _at(metric, k), better) for k in report.ks if report.has(metric, k)]
    if unread_shares(report):
        columns.append(("unread share", lambda r: r.unread_share, ""))
    return _table(report.results, columns, "span metrics: higher is better; wrong_doc: lower is better") \
        if columns else ""


def _seconds(stage: str) -> Callable[[ChunkerReport], float | None]:
    return lambda r: r.seconds.get(stage)


def _cost_table(report: BenchReport) -> str:
    stages = report.stages()
    if not stages:
        return ""
    columns: list[Column] = [(f"seconds {s}", _seconds(s), "") for s in stages]
    columns.append(("seconds total", lambda r: sum(r.seconds.values()), ""))
    if any(r.llm_calls for r in report.results.values()):
        columns.append(("LLM calls", lambda r: r.llm_calls, ""))
    return _table(report.results, columns, "cached stages take next to no time")


def _interval_table(report: BenchReport) -> str:
    """The headline metrics as "0.540 [0.40, 0.68]": each figure with its 95 % bootstrap interval."""
    metrics = compared_metrics(report.to_json())
    if not metrics:
        return ""
    columns: list[Column] = [(m, _cell_of(m), "") for m in metrics]
    return _table(report.results, columns, "each figure with its 95 % interval (bootstrap over the questions)")


def _pair_list(report: BenchReport) -> str:
    lines = pair_lines(report)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line.replace('`', ''))}</li>" for line in lines[1:])
    return f"<p>{escape(lines[0])}</p><ul class='pairs'>{items}</ul>"


def _answer_table(report: BenchReport) -> str:
    if not any(r.answer_f1 is not None for r in report.results.values()):
        return ""
    return _table(report.results, [("answer token F1", lambda r: r.answer_f1, "max"),
                                   ("answer ROUGE-L", lambda r: r.answer_rouge_l, "max"),
                                   ("answers scored", lambda r: r.answers_scored, "")])


def winner(report: BenchReport) -> str | None:
    """The comparison's best chunker: highest hit at the smallest k, then highest MRR at the largest (the two
    figures "What this shows" opens with), then the first in the report; None without a hit figure."""
    ks = sorted(report.ks)
    hits = report.values("hit", ks[0]) if ks else {}
    if not hits:
        return None
    mrr = report.values("mrr", ks[-1])
    return max(hits, key=lambda s: (hits[s], mrr.get(s, 0.0)))  # max keeps the first of equals


def _winner_code(report: BenchReport) -> str:
    """The winner's "Use it in your code" snippet (`Chunker.snippet`), or a line saying why there is none."""
    best = winner(report)
    if best is None or len(report.results) < 2:
        return ""
    try:
        snippet = make_chunker(best).snippet()
    except ChunkLensError as exc:  # a chunker this ChunkLens does not know (a report of another version)
        snippet, why = None, f"no snippet: {exc}"
    else:
        why = "this chunker offers no snippet"
    k = min(report.ks)
    head = (f"<p>Best by hit@{k}: <code>{escape(best)}</code> "
            f"({_cell(report.results[best].at('hit', k))}). The same chunker in your own code:</p>")
    if snippet is None:
        return f"<p>Best by hit@{k}: <code>{escape(best)}</code>; {escape(why)}.</p>"
    return f"{head}<pre class='snippet'><code class='language-python'>{escape(snippet)}</code></pre>"


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


def _figure_view(report: BenchReport) -> BenchReport:
    """The report with every chunker spec escaped for Plotly's labels (the numbers untouched)."""
    return report.labelled(plotly_label)


def _figures(report: BenchReport, draw: Figures) -> dict[str, str]:
    from core.outputs import figures

    view = _figure_view(report)
    ks = report.ks
    kmax = max(ks)
    out = {"rank": "".join(draw(figures.metric_vs_k(view, m, TEMPLATE)) for m in RANK_METRICS
                           if all(report.values(m, k) for k in ks))}
    if report.values("span_iou", kmax) and report.values("span_recall", kmax):
        out["span"] = draw(figures.bars(view, {f"span IoU@{kmax}": _at("span_iou", kmax),
                                               f"span recall@{kmax}": _at("span_recall", kmax)}, "Span metrics",
                                         TEMPLATE))
    chunkers, docs, matrix = collisions_of(report)
    if chunkers and docs:
        out["heatmap"] = draw(figures.collision_heatmap(chunkers, docs, matrix))  # it escapes the names
    wrong = [k for k in ks if report.values("wrong_doc", k)]
    if wrong:
        out["wrong_doc"] = draw(figures.bars(view, {f"wrong_doc@{k}": _at("wrong_doc", k) for k in wrong},
                                             "Collisions: share of the top k from a document without the answer",
                                             TEMPLATE))
    metrics = compared_metrics(report.to_json())
    shown = interval_rows(view.to_json(), [m for m in metrics if not lower_is_better(m)])
    if shown:
        out["intervals"] = draw(figures.interval_chart(shown, "Headline metrics with their 95 % intervals",
                                                       TEMPLATE))
    pairs = pair_matrix(view.to_json(), metrics[0]) if metrics else None
    if pairs is not None:
        out["pairs"] = draw(figures.pair_matrix(pairs, TEMPLATE))
    stages = [s for s in report.stages() if s != "lexical"]
    if stages:
        out["seconds"] = draw(figures.bars(view, {s: _stage_seconds(s) for s in stages},
                                           "Seconds per stage", TEMPLATE))
    return out


# --- the page ----------------------------------------------------------------------------------------------------

def _section(report: BenchReport, index: int, draw: Figures, generated: str | None, heading: bool) -> str:
    figs = _figures(report, draw)
    paragraph = " ".join(summary_sentences(report))
    parts = [f"<section class='report' id='report-{index}'>"]
    if heading:
        parts.append(f"<h2>{escape(report.dataset or f'report {index}')}</h2>")
    parts += [f"<section class='summary' id='summary-{index}'><h3>What this shows</h3><p>{escape(paragraph)}</p>"
              "</section>",
              "<h3>Settings and versions</h3>", _settings_table(report, generated),
              "<h3>Chunkers</h3>", _chunker_table(report),
              "<h3>Retrieval quality</h3>", _rank_table(report), figs.get("rank", "")]
    code = _winner_code(report)
    if code:
        parts += ["<h3>Use the winner in your code</h3>", code]
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


def render_html(reports: Report | BenchReport | Sequence[Report | BenchReport], title: str | None = None,
                generated: str | None = None) -> str:
    """The whole HTML file of one bench report or a list of them (one section each). `generated` (say a date) is
    shown only when given, so the same input gives the same file."""
    given = [reports] if isinstance(reports, Mapping | BenchReport) else list(reports)
    if not given:
        raise ChunkLensError("not a bench report (an empty list)")
    items = [view_of(r, "report" if len(given) == 1 else f"report {i + 1}") for i, r in enumerate(given)]
    datasets = ", ".join(r.dataset or "?" for r in items)
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


def rows_table(rows: Mapping[str, Any], columns: Sequence[tuple[str, Callable[[Any], Any], str]],
               caption: str = "") -> str:
    """A table of one row per chunker (its name, then the row): columns are (header, getter of a row's value,
    "max" / "min" / "": which value is best and set in bold)."""
    return _table(rows, list(columns), caption)


def settings_table(settings: Mapping[str, Any]) -> str:
    """Name / value rows (settings and versions)."""
    return "<table class='settings'>" + "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in settings.items()) + "</table>"
