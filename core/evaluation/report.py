"""Markdown tables from `python -m core bench` JSON files, so the figures in the docs are regenerated, not retyped.

`render_results` writes docs/RESULTS.md from the reports committed in docs/results and that folder's
`index.json`, which lists the sections: a title, what the table shows, the command that wrote the report, the
report file, the metrics and cut-offs to show. A section with `rows` (label, report, chunker) instead shows
chosen results of several reports in one table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from core.evaluation.agreement import agreement_table
from core.evaluation.embedder_choice import study_table
from core.evaluation.fields import FieldShow, Place, shown_fields
from core.evaluation.published import load_published, per_corpus_lines, published_table
from core.evaluation.results import BenchReport, ChunkerReport
from core.evaluation.verdicts import better_first, gain
from core.infra.errors import ChunkLensError
from core.infra.jsonio import loads_checked

#: a column beyond the metrics: its value in one result (None: nothing to show)
Extra = Callable[[ChunkerReport], object]
#: the generic cost and answer columns, in three runs between which the methods' columns go (`extras`)
WALL: dict[str, Extra] = {"wall s": lambda r: sum(r.seconds.values())}
LLM_USE: dict[str, Extra] = {
    "llm calls": lambda r: r.llm_calls or None,
    "llm tokens in / out": lambda r: f"{r.llm_tokens_in:,} / {r.llm_tokens_out:,}" if r.llm_calls else None,
    "chunk s": lambda r: r.seconds["chunk"] if r.llm else None,  # runs with a CNM backend
}
ANSWERS: dict[str, Extra] = {
    "answer F1": lambda r: r.answer_f1,
    "answer ROUGE-L": lambda r: r.answer_rouge_l,
    "answer calls": lambda r: r.answer_calls if r.holds("answer_f1") else None,
    "answer tokens in / out": lambda r: (f"{r.answer_tokens_in:,} / {r.answer_tokens_out:,}"
                                         if r.holds("answer_tokens_in") else None),
    "answer s": lambda r: r.answer_seconds,
    "unread by embedder": lambda r: r.unread_share or None,  # shown where some text goes unread
}


def _shows(place: Place) -> list[FieldShow]:
    return [show for show in shown_fields(place) if show.markdown]


def extras() -> dict[str, Extra]:
    """Every extra column by heading, in table order: the wall time, the methods' costs, the LLM use, the methods'
    quality fields, the generated answers, and what a chunker did to the text (registered by the methods,
    `core.evaluation.fields`)."""
    return {**WALL, **{s.label: s.value for s in _shows("cost")}, **LLM_USE,
            **{s.label: s.value for s in _shows("quality")}, **ANSWERS,
            **{s.label: s.value for s in _shows("fidelity")}}


def load_reports(path: Path) -> list[BenchReport]:
    """The bench reports of a file (one, or a list of them), each checked (`BenchReport.from_json`; an error names
    the file, and which report of a list)."""
    try:
        data = loads_checked(Path(path).read_bytes())
    except (OSError, ValueError) as exc:  # ValueError: also JSON nested too deeply to parse
        raise ChunkLensError(f"{path}: not a bench report ({exc})") from exc
    reports = data if isinstance(data, list) else [data]
    if not all(isinstance(r, dict) and "results" in r and "k" in r for r in reports):
        raise ChunkLensError(f"{path}: not a bench report (no 'results')")
    return [BenchReport.from_json(r, str(path) if len(reports) == 1 else f"{path} (report {i + 1})")
            for i, r in enumerate(reports)]


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def metric_cell(result: ChunkerReport, column: str, digits: int = 3) -> str:
    """A metric's value, with its 95 % interval when the report has one: "0.536 [0.41, 0.66]"."""
    value, bounds = result.get(column), result.get(f"{column}_ci95")
    if not isinstance(value, float) or not isinstance(bounds, list) or len(bounds) != 2:
        return _cell(value) if digits == 3 else ("-" if value is None else f"{value:.{digits}f}")
    return f"{value:.{digits}f} [{bounds[0]:.2f}, {bounds[1]:.2f}]"


def pair_lines(report: BenchReport) -> list[str]:
    """The report's paired comparisons said plainly: which chunker is reliably ahead of which on each headline
    metric (a paired sign-flip test, Holm-corrected, p < 0.05), and how many pairs are too close to call."""
    pairs = report.pairs or []
    if not pairs:
        return []
    lines = []
    for metric in dict.fromkeys(p["metric"] for p in pairs):
        shown = [p for p in pairs if p["metric"] == metric]
        ahead = []
        for p in (p for p in shown if p["significant"]):
            better, worse = better_first(p)
            by, low, high = gain(p)
            ahead.append(f"`{better}` > `{worse}` (by {by:.3f} [{low:.2f}, {high:.2f}], p = {p['p_holm']:.3g})")
        lines.append(f"{metric}: " + ("; ".join(ahead) if ahead else "no pair reliably apart")
                     + f" ({len(shown) - len(ahead)} of {len(shown)} pairs within noise)")
    return ["Reliably apart (paired sign-flip test over questions, Holm-corrected p < 0.05; the better first, by "
            "how much, with its 95 % interval):",
            *lines]


def _extra(name: str, get: Extra, result: ChunkerReport) -> str:
    value = get(result)
    return f"{value:.1f}" if name in ("wall s", "answer s", "chunk s") and value is not None else _cell(value)


def _columns(results: Sequence[ChunkerReport], metrics: Sequence[str],
             ks: Sequence[int]) -> tuple[list[str], dict[str, Extra]]:
    """The metric@k columns, which every result must carry, and the extra columns (`extras`) any of them calls
    for: a registered field's own rule (`FieldShow.wanted_by`), else a value there."""
    columns = [f"{m}@{k}" for m in metrics for k in ks]
    missing = sorted({c for r in results for c in columns if not r.holds(c)})
    if missing:
        raise ChunkLensError(f"the report has no {', '.join(missing)}")
    rules = {show.label: show.wanted_by for show in shown_fields() if show.markdown}
    shown = {name: get for name, get in extras().items()
             if any(rules[name](r) if name in rules else get(r) is not None for r in results)}
    return columns, shown


def rerank_phrase(retrieval: Mapping[str, object]) -> str:
    """", reranked by ... (top N, weight W)" for a `RetrievalSettings.describe()` record with a reranker, else ""."""
    if retrieval.get("rerank", "none") == "none":
        return ""
    return (f", reranked by {retrieval['rerank']} (top {retrieval.get('rerank_depth')}, "
            f"weight {retrieval.get('rerank_weight', 1.0):g})")


def retrieval_phrase(report: BenchReport) -> str:
    """How a report's chunkers were searched, in a few words: the mode, and the second stage if there was one."""
    return str(report.retrieval.get("mode", "dense")) + rerank_phrase(report.retrieval)


def markdown_table(report: BenchReport, metrics: Sequence[str], ks: Sequence[int] | None = None) -> str:
    """One row per chunker: parents, children, mean parent tokens, each metric@k, then cost columns that
    carry information in this report (wall seconds always)."""
    results = report.results
    columns, extra_columns = _columns(list(results.values()), metrics, list(ks or report.ks))
    header = ["chunker", "chunks", "children", "tokens", *columns, *extra_columns]
    retrieval = retrieval_phrase(report)
    lines = [f"{report.dataset}: {report.n_questions} questions, {report.n_documents} documents"
             + (" joined into one stream" if report.joined else "")
             + f", embedder {report.embedder}, retrieval {retrieval}"
             + (", product-named questions" if report.qualify_queries else ""), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in results.items():
        row = [f"`{name}`", str(r.n_chunks), str(r.n_children or "-"), f"{r.mean_chunk_tokens:.0f}",
               *[metric_cell(r, c) for c in columns], *[_extra(e, get, r) for e, get in extra_columns.items()]]
        lines.append("| " + " | ".join(row) + " |")
    if any(r.get("per_corpus") for r in results.values()):  # `bench --protocol chroma`
        lines += ["", *per_corpus_lines({spec: r.to_json() for spec, r in results.items()}, columns)]
    if pairs := pair_lines(report):
        lines += ["", pairs[0], "", *[f"- {line}" for line in pairs[1:]]]
    return "\n".join(lines)


def comparison_table(folder: Path, rows: Sequence[dict[str, str]], metrics: Sequence[str],
                     ks: Sequence[int]) -> str:
    """One row per (report, chunker) pair named in `rows`, each with its own label: results of several runs
    (another backend, a joined stream) side by side. The cost columns are those any of the rows carries."""
    picked = []
    for row in rows:
        report = load_reports(Path(folder) / row["report"])[0]
        if row["chunker"] not in report.results:
            raise ChunkLensError(f"{row['report']} has no result for '{row['chunker']}'")
        picked.append((row["label"], row["chunker"], report.results[row["chunker"]]))
    columns, extra_columns = _columns([r for *_, r in picked], metrics, ks)
    header = ["run", "chunker", "chunks", *columns, *extra_columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, name, r in picked:
        cells = [label, f"`{name}`", str(r.n_chunks), *[metric_cell(r, c) for c in columns],
                 *[_extra(e, get, r) for e, get in extra_columns.items()]]
        lines.append("| " + " | ".join(cells) + " |")
    for name in dict.fromkeys(row["report"] for row in rows):  # each report's tests among the rows shown
        shown = {row["chunker"] for row in rows if row["report"] == name}
        report = load_reports(Path(folder) / name)[0]
        among = [p for p in report.pairs or [] if p["a"] in shown and p["b"] in shown]
        if pairs := pair_lines(dataclasses.replace(report, pairs=among)):
            lines += ["", f"{pairs[0][:-1]}, `{name}`:", "", *[f"- {line}" for line in pairs[1:]]]
    return "\n".join(lines)


INDEX = "index.json"


def render_results(folder: Path) -> str:
    """docs/RESULTS.md: every section of `folder/index.json`, each table made from its committed report."""
    try:
        index = loads_checked((Path(folder) / INDEX).read_bytes())
        sections = index["sections"]
    except (OSError, ValueError, KeyError) as exc:
        raise ChunkLensError(f"{Path(folder) / INDEX}: not a results index ({exc})") from exc
    out = [f"# {index.get('title', 'Results')}", "", index.get("intro", ""), ""]
    for s in sections:
        out += [f"## {s['title']}", "", s.get("about", ""), "", "```bash", s["command"].strip(), "```", ""]
        metrics = s.get("metrics", ["hit", "mrr", "ndcg"])
        if s.get("kind") == "agreement":  # a bench/agreement.py study: two sets' chunker rankings compared
            out += [agreement_table(loads_checked((Path(folder) / s["report"]).read_bytes())), ""]
            s = {k: v for k, v in s.items() if k != "report"}
        if s.get("kind") == "embedder_choice":  # bench/embedder_choice.py: two embedders, paired per question
            out += [study_table(loads_checked((Path(folder) / s["study"]).read_bytes())), ""]
        if s.get("kind") == "published":  # a paper's published rows beside this report's (core.evaluation.published)
            out += [published_table(load_reports(Path(folder) / s["report"])[0].to_json(),
                                    load_published(Path(folder) / s["published"]), max(s["k"])), ""]
        if "rows" in s:  # several runs side by side
            out += [comparison_table(Path(folder), s["rows"], metrics, s["k"]), ""]
        for report in load_reports(Path(folder) / s["report"]) if "report" in s else []:
            if "pair_metrics" in s:  # only these metrics' paired tests (their p-values as the report holds them)
                report = dataclasses.replace(report, pairs=[p for p in report.pairs or []
                                                            if p["metric"] in s["pair_metrics"]])
            out += [markdown_table(report, metrics, s.get("k")), ""]
        if s.get("notes"):
            out += [s["notes"], ""]
    out.append(f"_Generated by `python -m core table --results {folder} --out RESULTS.md` from the reports in "
               f"`{folder}`: change `{INDEX}` or rerun a command, never this file._")
    return "\n".join(out) + "\n"
