"""Published figures beside ours: a bench report's rows next to the rows of a paper's table (a JSON fixture of
figures read in a source, e.g. docs/results/chroma_published.json), and a report's means per corpus under its
table. Markdown only; the figures are the files', never retyped.

A fixture holds `tables`, each with `title`, `embedder`, `source`, `read_from` and `rows`; a row has a `name`,
the ChunkLens spec it maps to (`chunklens`, or null) and its figures as [mean] or [mean, spread], as fractions,
under `recall`, `precision`, `precision_omega` and `iou`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject, loads_checked

#: the fixture's figures and the report's keys for them at cut-off k (None: the key has no cut-off)
FIGURES = (("recall", "span_recall"), ("precision", "span_precision"), ("precision_omega", "span_precision_omega"),
           ("iou", "span_iou"))
HEADER = ["configuration", "run", "embedder", "recall", "precision", "precision Ω", "IoU"]


def load_published(path: Path) -> JsonObject:
    """A fixture of published figures; a ChunkLensError naming the file when it is not one."""
    try:
        data = loads_checked(Path(path).read_bytes())
        tables = data["tables"]
        if not isinstance(tables, list) or not all(isinstance(t.get("rows"), list) for t in tables):
            raise ValueError("'tables' is not a list of tables with rows")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ChunkLensError(f"{path}: not a fixture of published figures ({exc})") from exc
    return data


def _key(figure: str, k: int) -> str:
    return dict(FIGURES)[figure] + ("" if figure == "precision_omega" else f"@{k}")


def ours_cell(result: Mapping[str, Any], key: str) -> str:
    """"0.812 [0.78, 0.84] ± 0.33": the mean, its 95 % interval and the standard deviation over questions."""
    value = result.get(key)
    if not isinstance(value, int | float):
        return "-"
    bounds = result.get(f"{key}_ci95")
    at = key.rfind("@")
    std = result.get(f"{key[:at]}_std{key[at:]}" if at > 0 else f"{key}_std")
    cell = f"{value:.3f}"
    if isinstance(bounds, list) and len(bounds) == 2:
        cell += f" [{bounds[0]:.2f}, {bounds[1]:.2f}]"
    return cell + (f" ± {std:.2f}" if isinstance(std, int | float) else "")


def published_cell(figure: Sequence[float] | None) -> str:
    if not figure:
        return "-"
    return f"{figure[0]:.3f}" + (f" ± {figure[1]:.2f}" if len(figure) > 1 else "")


def published_table(report: Mapping[str, Any], published: Mapping[str, Any], k: int) -> str:
    """Every chunker of `report` and, under it, each published row mapped to it; then the published rows no
    chunker maps to; then, for each published recall measured with our embedder, whether it lies inside our 95 %
    interval; then the sources."""
    results = report["results"]
    embedder = str(report.get("embedder", ""))
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    rows = [(t, row) for t in published["tables"] for row in t["rows"]]
    verdicts = []
    for spec, r in results.items():
        lines.append("| " + " | ".join([f"`{spec}`", "ChunkLens", embedder.split(" (")[0],
                                        *[ours_cell(r, _key(f, k)) for f, _ in FIGURES]]) + " |")
        for table, row in rows:
            if row.get("chunklens") == spec:
                lines.append(_published_line(row, table, f"↳ {row['name']}"))
                verdicts += _inside(spec, r, row, table, embedder, k)
    for table, row in rows:
        if row.get("chunklens") not in results:
            lines.append(_published_line(row, table, row["name"]))
    sources = [f"- {t['title']}: {t['source']} ({t['read_from']})" for t in published["tables"]]
    out = [*lines, "", *verdicts, *([""] if verdicts else []), "Published figures (mean ± standard deviation over "
           "questions where the source gives one), from:", "", *sources]
    if published.get("not_found"):
        out += ["", f"Not found: {published['not_found']}"]
    return "\n".join(out)


def _published_line(row: Mapping[str, Any], table: Mapping[str, Any], label: str) -> str:
    run = "Chroma, " + ("notebook" if "notebook" in table.get("id", "") else "report")
    return "| " + " | ".join([label, run, table["embedder"], *[published_cell(row.get(f)) for f, _ in FIGURES]]) + " |"


def _inside(spec: str, result: Mapping[str, Any], row: Mapping[str, Any], table: Mapping[str, Any], embedder: str,
            k: int) -> list[str]:
    """A sentence for each published figure our interval can be held against: a recall measured with the embedder
    this report used, and any Precision_Omega (a property of the chunks alone: no embedder, no search)."""
    out = []
    for figure, what, same in (("recall", "recall", embedder.startswith(table["embedder"])),
                               ("precision_omega", "Precision_Omega", True)):
        key = _key(figure, k)
        published, bounds = row.get(figure), result.get(f"{key}_ci95")
        if not published or not same or not isinstance(bounds, list):
            continue
        where = "inside" if bounds[0] <= published[0] <= bounds[1] else "outside"
        out.append(f"- `{spec}`: Chroma's {what} {published[0]:.3f} ({table['embedder']}, {row['name']}) lies "
                   f"{where} ChunkLens's 95 % interval [{bounds[0]:.3f}, {bounds[1]:.3f}] (mean {result[key]:.3f}).")
    return out


def per_corpus_lines(results: Mapping[str, Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    """The table's metric columns (and Precision_Omega) per corpus of every chunker that has `per_corpus`."""
    shown = [*columns, "span_precision_omega"]
    header = ["chunker", "corpus", "questions", *shown]
    lines = ["Per corpus (each corpus's questions; 95 % intervals):", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for spec, r in results.items():
        for corpus, c in (r.get("per_corpus") or {}).items():
            lines.append("| " + " | ".join([f"`{spec}`", corpus, str(c.get("n_questions", "-")),
                                            *[_corpus_cell(c, m) for m in shown]]) + " |")
    return lines


def _corpus_cell(entry: Mapping[str, Any], key: str) -> str:
    value, bounds = entry.get(key), entry.get(f"{key}_ci95")
    if not isinstance(value, int | float):
        return "-"
    return f"{value:.3f}" + (f" [{bounds[0]:.2f}, {bounds[1]:.2f}]" if isinstance(bounds, list) else "")
