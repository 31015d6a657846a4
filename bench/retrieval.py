"""Retrieval modes across the shared sets: dense, BM25 and hybrid (RRF and weighted, several lexical weights).

    python -m bench.retrieval [--sets emanual_q,emanual,chroma_eval,covid_qa,sample_q]
                              [--chunkers naive-500t,recursive,chop] [--weights 0.3,0.5,0.7] [--k 1,3,5,10]
                              [--long-text truncate] [--out REPORT.json] [--render docs/results]

Every setting goes through `core.evaluation.bench.bench_dataset`, the evaluation `python -m core bench` runs, on the
same chunk runs, vectors and collections (all cached in the workspace, so only the first setting chunks and embeds).
The lexical weight's default is chosen here, over every set at once: for each fusion the weight with the best
mean MRR@10 over all (set, chunker) pairs, so no single set tunes it. The report keeps every bench report and
prints one table per set plus the choice.

Sets: `emanual_q` is emanual_galaxy with product-named questions (`--qualify-queries`), `emanual` the same with
plain questions; `chroma_eval`, `covid_qa` as they are, read from ../shared/data (or --shared); `sample_q` the
project's own sample set with product-named questions (the guided demo's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import write_study
from bench.study_metrics import HIT_1, HIT_10, MRR_10, SPAN_RECALL_5, WRONG_DOC_10
from core.evaluation.metric_at import MetricAt

SETS = {"emanual_q": ("emanual_galaxy", True), "emanual": ("emanual_galaxy", False),
        "chroma_eval": ("chroma_eval", False), "covid_qa": ("covid_qa", False),
        "sample_q": ("sample_data/qa", True)}  # the project's own set (the guided demo's), product-named
ROOT = Path(__file__).resolve().parents[1]


def settings_grid(weights: list[float]) -> list[tuple[str, dict[str, Any]]]:
    grid: list[tuple[str, dict[str, Any]]] = [("dense", {"mode": "dense"}), ("bm25", {"mode": "bm25"})]
    for fusion in ("rrf", "weighted"):
        for w in weights:
            grid.append((f"hybrid-{fusion}-{w:g}", {"mode": "hybrid", "fusion": fusion, "lexical_weight": w}))
    return grid


def choose_weights(reports: dict[str, dict[str, dict[str, Any]]], metric: MetricAt = MRR_10) -> dict[str, Any]:
    """Per fusion, the lexical weight with the best mean `metric` over every (set, chunker) pair."""
    means: dict[str, float] = {}
    for label in next(iter(reports.values())):
        values = [metric.read(r) for per_set in reports.values() for r in per_set[label]["results"].values()]
        means[label] = statistics.fmean(values)
    best = {}
    for fusion in ("rrf", "weighted"):
        labels = [lb for lb in means if lb.startswith(f"hybrid-{fusion}-")]
        if labels:
            top = max(labels, key=lambda lb: means[lb])
            best[fusion] = {"lexical_weight": float(top.rsplit("-", 1)[1]), f"mean_{metric}": means[top]}
    return {"metric": metric.key, "means": means, "best": best}


def _set_table(set_name: str, per_setting: dict[str, dict[str, Any]]) -> list[str]:
    """One set's sweep as Markdown: a row per setting, a column per chunker (printed, and in docs/RETRIEVAL.md)."""
    chunkers = list(next(iter(per_setting.values()))["results"])
    spans = set_name in ("chroma_eval", "covid_qa")
    lines = [f"### {set_name}" + (" (product-named questions)" if set_name == "emanual_q" else ""), "",
             "| setting | " + " | ".join(f"`{c}`" for c in chunkers) + " |", "|---|" + "---|" * len(chunkers)]
    for label, rep in per_setting.items():
        cells = []
        for c in chunkers:
            r = rep["results"][c]
            cell = f"{HIT_1.read(r):.2f} / {HIT_10.read(r):.2f} / {MRR_10.read(r):.3f}"
            cells.append(cell + (f" / {SPAN_RECALL_5.read(r):.3f}" if spans else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines + [""]


MODE_TABLES = (
    ("emanual_qualified", "emanual_galaxy, product-named questions", "../shared/data/emanual_galaxy", True),
    ("emanual_plain", "emanual_galaxy, plain questions", "../shared/data/emanual_galaxy", False),
    ("sample_qualified", "the sample set (7 manuals, Markdown headings), product-named questions", "sample_data/qa",
     True),
)


def embedder_flag(described: str | None) -> str:
    """The --embedder flag (and a space) that reproduces a report, from the embedder it names
    (`Embedder.describe()`); nothing when it names none."""
    from core.store.embeddings import BUNDLED_MINILM, BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8

    if not described:
        return ""
    if described.startswith("all-MiniLM-L6-v2 int8"):
        return f"--embedder {BUNDLED_MINILM_INT8} "
    if described.startswith("all-MiniLM-L6-v2 fp32"):
        return f"--embedder {BUNDLED_MINILM_FP32} "
    if described.startswith("all-MiniLM-L6-v2 ("):
        return f"--embedder {BUNDLED_MINILM} "
    return f"--embedder '{described.split(' (')[0]}' "


def first_report(reports: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    """The first of a bench JSON file's reports (one report, or a list of them with several --data)."""
    return reports[0] if isinstance(reports, list) else reports


def _mode_tables(folder: Path, stem: str, title: str, data: str, qualify: bool) -> list[str]:
    """The per-mode bench reports `{stem}_{mode}.json`, as one table: a row per chunker, a column per mode."""
    reports = {m: json.loads(p.read_text(encoding="utf-8")) for m in ("dense", "bm25", "hybrid")
               if (p := folder / f"{stem}_{m}.json").exists()}
    if not reports:
        return []
    first = next(iter(reports.values()))
    lines = [f"### {title}", "", "```bash", "S=" + ",".join(first["results"]),
             f"python -m core bench {embedder_flag(first.get('embedder'))}--data {data} --chunkers $S --k 1,3,10"
             + (" --qualify-queries" if qualify else "")
             + " --retrieval dense|bm25|hybrid", "```", "",
             "| chunker | " + " | ".join(f"{m} hit@1 / hit@10 / MRR@10 / wrong_doc@10" for m in reports) + " |",
             "|---|" + "---|" * len(reports)]
    for spec in first["results"]:
        cells = []
        for rep in reports.values():
            r = rep["results"][spec]
            cells.append(f"{HIT_1.read(r):.2f} / {HIT_10.read(r):.2f} / {MRR_10.read(r):.3f} / "
                         f"{WRONG_DOC_10.read(r):.2f}")
        lines.append(f"| `{spec}` | " + " | ".join(cells) + " |")
    hybrid = reports.get("hybrid", {}).get("retrieval")
    if hybrid:
        lines += ["", "hybrid = " + ", ".join(f"{k} {v}" for k, v in hybrid.items() if k != "lexical")]
    return lines + [""]


#: title routing against CHOP's filter (docs/results/route_*.json): report stem, data folder, joined
ROUTE_REPORTS = (
    ("route_emanual_galaxy", "../shared/data/emanual_galaxy", False),
    ("route_eurorack", "../shared/data/eurorack_modules", False),
    ("route_sample", "sample_data/qa", False),
    ("route_eurorack_joined", "../shared/data/eurorack_modules", True),
    ("route_sample_joined", "sample_data/qa", True),
)
ROUTE_SPECS = "naive-500t,naive-500t:retrieval=route,chop:retrieval=filter,chop:retrieval=route"


def route_command(folder: Path) -> str:
    """The commands that made the title-routing reports (also the results index's command for them)."""
    lines = [f"S={ROUTE_SPECS}"]
    for stem, data, join in ROUTE_REPORTS:
        if (p := folder / f"{stem}.json").exists():
            embedder = embedder_flag(first_report(json.loads(p.read_text(encoding="utf-8"))).get("embedder"))
            lines.append(f"python -m core bench {embedder}--llm extract --data {data} --chunkers $S --k 1,3,10 "
                         f"--qualify-queries{' --join' if join else ''} --out docs/results/{stem}.json")
    return "\n".join(lines)


def _applied(r: dict[str, Any]) -> str:
    return ", ".join(f"{what}: {n}" for what, n in (r.get("retrieval_applied") or {}).items()) or "-"


def _route_section(folder: Path) -> list[str]:
    """Title routing (`retrieval=route`) beside CHOP's filter, with and without titles, and its lexical side."""
    reports = {stem: (first_report(json.loads(p.read_text(encoding="utf-8"))), join)
               for stem, _, join in ROUTE_REPORTS if (p := folder / f"{stem}.json").exists()}
    if not reports:
        return []
    lines = ["## Routing by title, the metadata baseline beside CHOP's filter", "",
             "Many deployments know each document's product from its metadata. `retrieval=route` (any chunker, "
             "`chop` too; retrieval only, so it shares the plain chunker's chunks and caches) matches the product a "
             "question names against the documents' titles, with the normaliser CHOP's model tags are matched with "
             "(`models_match`), and searches only the named document's chunks: a Chroma `where` on `doc_id` and a "
             "mask over BM25 (`core.store.routing`). A title is named by a run of the question's words holding "
             "its rarest word (\"S10\", \"Lite\", \"Shades\"); where runs overlap the longest wins, so \"Galaxy "
             "S10 Lite\" routes to the S10 Lite and \"Galaxy S10e\" never to the S10. Routing needs titles: a "
             "joined stream (one document made of segments) or a single upload has none to route by, so it searches "
             "unfiltered and records `none (one document: no titles to route by)`; a question naming no title is "
             "searched unfiltered too (`none (no title named)`). CHOP's filter infers its tags from the text "
             "instead. The questions name their product (`--qualify-queries`), which is when either can narrow "
             "the search; the plain questions of these sets name no product, and routing then changes nothing. "
             "CHOP's CNM backend is `extract` (the default); retrieval is the default hybrid.", "",
             "```bash", route_command(folder), "```", "",
             "| run | chunker | hit@1 | hit@10 | MRR@10 | wrong_doc@10 | what the policy applied (questions) |",
             "|---|---|---|---|---|---|---|"]
    for report, _ in reports.values():
        run = f"{report['dataset']}, {report['n_documents']} document{'s' if report['n_documents'] > 1 else ''}"
        for spec, r in report["results"].items():
            figures = " | ".join(f"{m.read(r):.3f}" for m in (HIT_1, HIT_10, MRR_10, WRONG_DOC_10))
            lines.append(f"| {run} | `{spec}` | {figures} | {_applied(r)} |")
    base, route, chop = "naive-500t", "naive-500t:retrieval=route", "chop:retrieval=filter"
    lines += ["", "hit@1 / MRR@10 of `naive-500t`, `naive-500t` routed by title, and CHOP's filter:", ""]
    titled: list[dict[str, Any]] = []
    streams: list[dict[str, Any]] = []
    for report, join in reports.values():
        res = report["results"]
        if not all(c in res for c in (base, route, chop)):
            continue
        (streams if join else titled).append(res)
        lines.append(f"- {report['dataset']}, {'one stream without titles' if join else 'with titles'}: "
                     + "; ".join(f"{label} {HIT_1.read(res[c]):.3f} / {MRR_10.read(res[c]):.3f}"
                                 for label, c in (("plain", base), ("routed", route), ("CHOP's filter", chop)))
                     + ".")
    if titled:
        ties = sum(HIT_1.read(r[route]) >= HIT_1.read(r[chop]) for r in titled)
        wrong = max(max(WRONG_DOC_10.read(r[route]), WRONG_DOC_10.read(r[chop])) for r in titled)
        lines += ["", f"With titles, routing alone matches or beats CHOP's filter on hit@1 on {ties} of {len(titled)} "
                  f"sets, with no tagging at all; both keep the top ten inside the named document (wrong_doc@10 at "
                  f"most {wrong:.3f})"
                  + (", so CHOP's inferred tags add little where the metadata already names the product."
                     if 2 * ties >= len(titled) else ", and CHOP's inferred tags lead on the other sets.")]
    if streams:
        same = all(m.read(r[route]) == m.read(r[base]) for r in streams for m in (HIT_1, HIT_10, MRR_10))
        gain = statistics.fmean(HIT_1.read(r[chop]) - HIT_1.read(r[base]) for r in streams)
        lines += ["", "In one stream routing has nothing to route by: "
                  + ("its rows are the plain ones to the last digit" if same else "it searches unfiltered")
                  + f", while CHOP's filter, whose tags come from the text, still narrows the search (hit@1 "
                  f"{gain:+.3f} over plain `naive-500t` on average). That is what CHOP adds over metadata routing."]
    lines.append("")
    if (folder / "route_residual.json").exists():
        lines += _route_residual(json.loads((folder / "route_residual.json").read_text(encoding="utf-8")))
    return lines


def _route_residual(study: dict[str, Any]) -> list[str]:
    """Routing's lexical side with and without the words that named the title (scripts/route_residual.py)."""
    from core.store.routing import TitleRoute

    lines = ["### Routing's lexical side: the question without the title's words, or the whole question", "",
             "Once routing has kept one document's chunks, the words that named its title can only favour the "
             "chunks that repeat the name, so BM25 reads the question without them, as CHOP's filter drops its "
             "model's words. Dense search never reads it; the lexical modes are measured with and without.", "",
             "```bash", study["command"], "```", "",
             "| mode | set | chunker | without the title's words: hit@1 / hit@10 / MRR@10 | whole question |",
             "|---|---|---|---|---|"]
    pairs = []
    for mode, per_set in study["results"].items():
        for set_name, per_spec in per_set.items():
            for spec, sides in per_spec.items():
                kept, whole = sides["residual"], sides["whole question"]
                pairs.append((kept, whole))
                lines.append(f"| {mode} | {set_name} | `{spec}` | {_hits(kept)} | {_hits(whole)} |")
    mean = {m: (statistics.fmean(m.read(k) for k, _ in pairs), statistics.fmean(m.read(w) for _, w in pairs))
            for m in (HIT_1, MRR_10)}
    better = sum(MRR_10.read(k) >= MRR_10.read(w) for k, w in pairs)
    lines += ["", f"Mean over these {len(pairs)} rows, hit@1 {mean[HIT_1][0]:.3f} against {mean[HIT_1][1]:.3f}, "
              f"MRR@10 {mean[MRR_10][0]:.3f} against {mean[MRR_10][1]:.3f}; MRR@10 is at least as good without "
              f"the title's words in {better} of {len(pairs)} rows. Routing "
              + ("drops them (`TitleRoute.residual`)." if TitleRoute.residual
                 else "reads the whole question (`TitleRoute.residual` is off)."), ""]
    return lines


def _cell(r: dict[str, Any]) -> str:
    return " / ".join(f"{m.read(r):.3f}" for m in (HIT_1, MRR_10, SPAN_RECALL_5))


def _window_table(window: dict[str, Any], truncate: dict[str, Any]) -> list[str]:
    lines = [f"```bash\n{window.get('command', '')}\n```", "", "Each cell: hit@1 / MRR@10 / span recall@5.", "",
             "| set | setting | chunker | truncate | window |", "|---|---|---|---|---|"]
    for set_name, per_setting in window["reports"].items():
        for label, rep in per_setting.items():
            base = truncate["reports"].get(set_name, {}).get(label)
            for spec, r in rep["results"].items():
                t = base["results"].get(spec) if base else None
                lines.append(f"| {set_name} | {label} | `{spec}` | {_cell(t) if t else '-'} | {_cell(r)} |")
    lines += ["", "Mean change from truncate to window over these sets and chunkers (MRR@10 / span recall@5):", ""]
    for label in next(iter(window["reports"].values())):
        deltas = [(MRR_10.read(r) - MRR_10.read(t), SPAN_RECALL_5.read(r) - SPAN_RECALL_5.read(t))
                  for set_name, per in window["reports"].items() for spec, r in per[label]["results"].items()
                  if (t := truncate["reports"].get(set_name, {}).get(label, {}).get("results", {}).get(spec))]
        if deltas:
            lines.append(f"- {label}: {statistics.fmean(d[0] for d in deltas):+.3f} / "
                         f"{statistics.fmean(d[1] for d in deltas):+.3f}")
    lines += ["", "The default stays `truncate`: under the default hybrid mode the two policies are within a few "
              "thousandths on average, while windowing helps dense search over 500-token chunks (it reads their "
              "second half) and costs an embedding per window."]
    return lines + [""]


def _cost_lines(cold: dict[str, Any]) -> list[str]:
    lines = ["| set | chunker | chunks | embed s (cold) | lexical index s | share |", "|---|---|---|---|---|---|"]
    for report in (cold if isinstance(cold, list) else [cold]):
        for spec, r in report["results"].items():
            s = r["seconds"]
            lines.append(f"| {report['dataset']} | `{spec}` | {r['n_chunks'] + r.get('n_children', 0)} | "
                         f"{s['embed']:.1f} | {s['lexical']:.2f} | {100 * s['lexical'] / max(s['embed'], 1e-9):.1f}% |")
    return lines + [""]


def _hits(r: dict[str, Any]) -> str:
    return " / ".join(f"{m.read(r):.3f}" for m in (HIT_1, HIT_10, MRR_10))


def analyzer_tables(study: dict[str, Any]) -> list[str]:
    """The analyzer study (scripts/analyzer_study.py) as Markdown: the mean over the sets with each analyzer's worst
    loss to the best candidate on one set, a column per set, and the choice. Printed by the study, and in
    docs/RETRIEVAL.md."""
    results, choice = study["results"], study["choice"]
    sets = list(results)
    labels = list(next(iter(results.values())))
    winner, best = choice["winner"], choice["best_per_set"]

    def name(label: str) -> str:
        return f"**`{label}`**" if label == winner else f"`{label}`"

    lines = [f"Mean over the {len(sets)} sets; a loss is how far an analyzer is behind the best analyzer on the "
             "set where it is furthest behind (the reference row is not among them).", "",
             "| analyzer | hit@1 | hit@10 | MRR@10 | worst hit@1 loss | worst hit@10 loss |",
             "|---|---|---|---|---|---|"]
    for label in labels:
        means = [statistics.fmean(m.read(results[s][label]) for s in sets) for m in (HIT_1, HIT_10, MRR_10)]
        losses = []
        for m in (HIT_1, HIT_10):
            loss = {s: m.read(best[s]) - m.read(results[s][label]) for s in sets}
            s_worst = max(sets, key=loss.__getitem__)
            losses.append(f"{loss[s_worst]:.3f} ({s_worst})")
        lines.append(f"| {name(label)} | " + " | ".join(f"{v:.3f}" for v in means) + " | " + " | ".join(losses)
                     + " |")
    lines += ["", "Each cell: hit@1 / hit@10 / MRR@10 (questions in brackets).", "",
              "| analyzer | " + " | ".join(f"{s} ({study['sets'][s]['n_questions']})" for s in sets) + " |",
              "|---|" + "---|" * len(sets)]
    lines += [f"| {name(label)} | " + " | ".join(_hits(results[s][label]) for s in sets) + " |" for label in labels]
    top = choice["best_mean"]

    def behind(violations: list[dict[str, Any]]) -> str:
        return "; ".join(f"{v['metric']} on {v['set']} by {v['loss']:.3f} (best there: "
                         + ", ".join(f"`{lb}`" for lb in labels if lb in choice["candidates"]
                                     and results[v["set"]][lb][v["metric"]] == best[v["set"]][v["metric"]]) + ")"
                         for v in violations)

    lines += ["", f"Chosen: `{winner}` ({choice['rule']})."]
    if choice["winner_violations"]:
        lines += ["", f"`{winner}` is more than {choice['max_loss']} behind on: {behind(choice['winner_violations'])}."]
    if top != winner:
        lines += ["", f"The best mean hit@1 is `{top}`'s, but it is more than {choice['max_loss']} behind on: "
                  f"{behind(choice['best_mean_violations'])}."]
    failing = choice["candidates_failing"]
    lines += ["", f"Analyzers more than {choice['max_loss']} behind the best on some set: {HIT_1.read(failing):g} of "
              f"{len(choice['candidates'])} on hit@1, {HIT_10.read(failing):g} on hit@10."]
    return lines + [""]


def _analyzer_section(study: dict[str, Any], measured_with_t1: bool) -> list[str]:
    """docs/RETRIEVAL.md's section on the analyzer: how it was measured, the tables, what the figures can say."""
    bm25, sets, choice = study["bm25"], study["sets"], study["choice"]
    lines = ["## BM25 analyzer, chosen by measurement", "", "```bash", study["command"], "```", "",
             f"Every analyzer indexes the same `{study['chunker']}` chunks (each chunk's prefix and text, as the "
             f"lexical index reads them) with the project's BM25 (bm25s, {bm25['method']}, k1 = {bm25['k1']}, "
             f"b = {bm25['b']}), and each question is scored against its gold spans by the bench's evaluation, so "
             "the figures are `python -m core bench --retrieval bm25`'s. Sets: every qa-spans folder in "
             "../shared/data and the sample set, those whose questions name a product also with product-named "
             "questions (`--qualify-queries`).", "",
             "All analyzers normalise (NFKC), case-fold and turn CJK runs into character bigrams. `t1` is the first "
             "analyzer: one-character tokens kept, Snowball English stemming, bm25s's English stop words, model "
             "numbers split at hyphens (\"SM-G973F\" gives \"sm\", \"g973f\"). Each other row changes one "
             "factor: `one_char=drop` drops single Latin letters and digits (never CJK); `stem=none` does not "
             "stem, `stem=light` only strips plural endings; `stop=none` keeps stop words; `models=join` adds the "
             "joined form of a hyphenated run holding a digit (\"smg973f\"), `models=letters-digits` also splits "
             "where letters meet digits (\"s10e\" gives \"s\", \"10\", \"e\"). The combination of each "
             "factor's best level by mean hit@1 is a row of its own when it differs from them. `bm25s default` is "
             "bm25s's own tokenizer (`\\b\\w\\w+\\b`, lower-cased, English stop words, no stemmer, no CJK "
             "bigrams), shown for reference.", "",
             f"The rule: the best mean hit@1 among the analyzers never more than {choice['max_loss']} hit@1 and "
             f"{choice['max_loss']} hit@10 behind the best analyzer on any one set; when there is none, the "
             "analyzer whose worst such loss is smallest. Evidence from outside these sets comes first: on "
             "held-out real manuals (a product manual among near-duplicates, 642 product-named questions, "
             "naive-500t, bm25s) dropping one-character tokens gained 0.15 hit@1 over t1; that change is taken "
             "unless these sets measure a loss for it (a mean hit@1 or hit@10 more than "
             f"{choice.get('no_harm', 0.01)} below t1's). The same measurement gave about 0.02 more for dropping "
             "the stemmer; over five chunkers (`--chunkers naive-500t,recursive,paragraph,sentence,semantic`, "
             "below) that cost hit@10 on covid_qa under every chunker and hit@1 on the small-chunk ones, so the "
             "stemmer stays.", ""]
    lines += analyzer_tables(study)
    core = study.get("core_tokenizer", {})
    if core.get("same_tokens_as"):
        lines += [f"`lexical_tokens` (tokenizer `{core['version']}`) gives the same tokens as "
                  f"`{core['same_tokens_as'][0]}` on every chunk and question above.", ""]
    steps = {name: 1 / info["n_questions"] for name, info in sets.items()}
    rows, winner = choice["candidates"], choice["winner"]
    lines += [f"What the figures can say: one question moves hit@1 by {min(steps.values()):.3f} on "
              f"{min(steps, key=steps.__getitem__)} and by {max(steps.values()):.3f} on "
              f"{max(steps, key=steps.__getitem__)}, so on the small sets the {choice['max_loss']} margin is one "
              "question, and most differences between the analyzers are a few questions a set. "
              f"`{winner}` against `t1`: mean hit@1 {rows[winner]['mean_hit@1']:.3f} against "
              f"{rows['t1']['mean_hit@1']:.3f}, mean hit@10 {rows[winner]['mean_hit@10']:.3f} against "
              f"{rows['t1']['mean_hit@10']:.3f}, worst loss "
              f"{max(rows[winner]['worst_hit@1_loss'], rows[winner]['worst_hit@10_loss']):.3f} against "
              f"{max(rows['t1']['worst_hit@1_loss'], rows['t1']['worst_hit@10_loss']):.3f}."]
    if measured_with_t1:
        lines += ["", "The bm25 and hybrid tables above were measured with `t1`; their commands measure the current "
                  "analyzer."]
    return lines + [""]


def render(folder: Path) -> str:
    """docs/RETRIEVAL.md from the reports committed in `folder` (docs/results)."""
    sweep = json.loads((folder / "retrieval_sweep.json").read_text(encoding="utf-8"))
    choice = sweep["choice"]
    lines = ["# Retrieval modes: dense, BM25 and hybrid, on every chunker", "",
             "Generated by `python -m bench.retrieval --render docs/results` from the JSON reports in "
             "`docs/results`; every table names the command that produced it. MiniLM (all-MiniLM-L6-v2 in fp32 "
             "on torch, 256 word pieces; the default embedder runs the same arithmetic on onnxruntime), rule CNM "
             "backend, embedded Chroma, on the 2-core development machine.", ""]
    lines += ["## Near-duplicate manuals: emanual_galaxy (19 Samsung manuals, 50 questions about the S10) and the "
              "sample set", ""]
    for stem, title, data, qualify in MODE_TABLES:
        lines += _mode_tables(folder, stem, title, data, qualify)
    lines += _route_section(folder)
    lines += ["## Choosing the default: every set at once", "", "```bash", sweep["command"], "```", "",
              f"Chunkers: {', '.join(f'`{c}`' for c in sweep['chunkers'])}. Each cell is hit@1 / hit@10 / MRR@10 "
              "(chroma_eval and covid_qa also span recall@5). `hybrid-rrf-W` fuses by reciprocal rank, "
              "`hybrid-weighted-W` by min-max scores, W the lexical weight.", "",
              f"Mean {choice['metric']} over every (set, chunker) pair:", "", "| setting | mean |", "|---|---|"]
    lines += [f"| {label} | {value:.3f} |" for label, value in choice["means"].items()]
    best = max(choice["means"], key=lambda lb: choice["means"][lb])
    lines += ["", f"The best is `{best}` ({choice['means'][best]:.3f}; dense {choice['means']['dense']:.3f}, bm25 "
              f"{choice['means']['bm25']:.3f}): it is the app's and the command line's default. Per fusion: "
              + "; ".join(f"{f} at lexical weight {b['lexical_weight']:g}" for f, b in choice["best"].items()) + ".",
              ""]
    for set_name, per_setting in sweep["reports"].items():
        lines += _set_table(set_name, per_setting)
    if (folder / "retrieval_window.json").exists():
        lines += ["## Long chunks: truncate at 256 word pieces, or window and mean-pool", ""]
        lines += _window_table(json.loads((folder / "retrieval_window.json").read_text(encoding="utf-8")), sweep)
    if (folder / "lexical_cost.json").exists():
        cost = json.loads((folder / "lexical_cost.json").read_text(encoding="utf-8"))
        lines += ["## What the lexical index costs", "", "```bash",
                  f"python -m core bench {embedder_flag(first_report(cost).get('embedder'))}"
                  "--data ../shared/data/chroma_eval --data ../shared/data/emanual_galaxy "
                  "--chunkers naive-500t,recursive,chop --retrieval hybrid --workspace EMPTY_FOLDER "
                  "--out docs/results/lexical_cost.json", "```", ""]
        lines += _cost_lines(cost)
    if (folder / "analyzer_study.json").exists():
        study = json.loads((folder / "analyzer_study.json").read_text(encoding="utf-8"))
        swept = next(iter(sweep["reports"].values())).get("bm25", {}).get("retrieval", {}).get("lexical", "")
        lines += _analyzer_section(study, "snowball" in swept)
    if (folder / "analyzer_study_chunkers.json").exists():
        lines += _across_chunkers(json.loads((folder / "analyzer_study_chunkers.json").read_text(encoding="utf-8")))
    if (folder / "rerank_study.json").exists():
        lines += _rerank_section(json.loads((folder / "rerank_study.json").read_text(encoding="utf-8")))
    return "\n".join(lines) + "\n"


def _rerank_section(study: dict[str, Any]) -> list[str]:
    """The second stage (bench.rerank): sentence max-sim at several weights against no reranking."""
    from bench.rerank import tables

    choice = study["choice"]
    winner = choice["winner"]
    lines = ["## Top-1 within the manual: a second stage that reads sentences", "", "```bash", study["command"], "```",
             "", "The first stage (the default hybrid search, and CHOP's filter where the spec has one) returns its "
             f"top {study['depth']}; `maxsim-W` re-orders them by each chunk's best sentence (the cosine of the "
             "question with the closest of the document's sentences inside the chunk, with the run's embedder), "
             "fused with the first-stage rank by reciprocal rank: (1 - W) / (60 + first rank) + W / (60 + "
             "max-sim rank). `none` is the first stage alone. A chunk of 500 tokens is embedded from its first 256 "
             "word pieces and scored by BM25 over every word; a sentence vector reads the one sentence that "
             "answers.", "", f"Rule: {choice['rule']}. Chosen: `{winner}`, the default reranker and weight of the app "
             "and the command line (`Settings.rerank`, `core.store.rerank.DEFAULT_WEIGHTS`).", "",
             "Why that guard: the weights from 0.3 to 0.5 are within 0.003 of each other in mean hit@1 and 0.007 in "
             "mean MRR@10, a few questions over 1,250, so the small sets cannot tell them apart. The two large sets "
             "can: past the chosen weight, span recall@5 of some chunker on them falls below the first stage's "
             "(the table's last column). Where the answer sits in one sentence, as in the product manuals, heavier "
             "weights help more (emanual_q, `chop:retrieval=filter`, hit@1 0.58 first stage, 0.78 to 0.82 "
             "reranked); where answers span several sentences of general text, a chunk's one best sentence is a "
             "weaker signal than the first stage's (chroma_eval at weight 1 loses 0.055 span recall@5).", "",
             "The other candidates for a better top 1 inside the right manual, and where their figures are: "
             "mean-pooled windows for long chunks (\"Long chunks\" above: +0.003 MRR@10 under the default hybrid "
             "search, not adopted); leaving out of the lexical query the words a CHOP filter or a title route has "
             "already matched (adopted; \"Routing's lexical side\" above); smaller CHOP windows "
             "(`chop:size=250:overlap=50:retrieval=filter` in the first table: hybrid hit@1 0.54 against 0.50, "
             "hit@10 0.88 against 0.94, not adopted as it loses hit@10); weighting the lexical side per question "
             "(a question that names a product and little else against a long one) was not measured.", "",
             "Reports elsewhere in this file whose `retrieval` record has no `rerank` key were measured without "
             "the second stage; add `--rerank none` to their commands to reproduce them.", "",
             "A cross-encoder (`--rerank model`) is not measured here: none ships its weights in an installable "
             "package. What one is expected to add, measured on web passages rather than manuals: on MS MARCO, "
             "BERT re-ranking of BM25's top 1,000 took dev MRR@10 from 16.7 (untuned Lucene BM25) to 36.5 (Nogueira "
             "and Cho 2019, arXiv:1901.04085); the 22M-parameter `cross-encoder/ms-marco-MiniLM-L-6-v2` reaches "
             "MRR@10 39.01 on MS MARCO dev and NDCG@10 74.30 on TREC DL 2019 (sbert.net, \"MS MARCO "
             "Cross-Encoders\").", ""]
    return lines + tables(study)


def _across_chunkers(study: dict[str, Any]) -> list[str]:
    """The analyzers on several chunkers' chunks: each one's mean hit@1 / hit@10 per chunker and over them all."""
    chunkers, analyzers = study["chunkers"], study["across"]["analyzers"]
    lines = ["### The analyzers on five chunkers", "", "```bash", study["command"], "```", "",
             f"Mean hit@1 / hit@10 over the sets of each chunker, and over all {study['across']['n_pairs']} "
             "chunker-set pairs.", "",
             "| analyzer | " + " | ".join(f"`{c}`" for c in chunkers) + " | all |",
             "|---|" + "---|" * (len(chunkers) + 1)]
    for label, row in analyzers.items():
        cells = [" / ".join(f"{m.read(r):.3f}" for m in (HIT_1, HIT_10))
                 for r in [*(row["per_chunker"][c] for c in chunkers), row["mean"]]]
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval", description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="emanual_q,emanual,chroma_eval,covid_qa,sample_q",
                        help=f"comma-separated, of: {', '.join(SETS)}")
    parser.add_argument("--chunkers", default="naive-500t,recursive,chop", help="chunker specs, comma-separated")
    parser.add_argument("--weights", default="0.3,0.5,0.6,0.7,0.8,0.9",
                        help="lexical weights tried for each fusion (the shipped default, 0.9, among them)")
    parser.add_argument("--k", default="1,3,5,10", help="cut-offs; 10 is always added (the sweep ranks by MRR@10)")
    parser.add_argument("--embedder", default=None, help="embedder spec (default: the app's default embedder)")
    parser.add_argument("--long-text", choices=["truncate", "window"], default="truncate",
                        help="the embedder's policy for long texts")
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data",
                        help="the shared data folder")
    parser.add_argument("--workspace", type=Path, help="workspace folder (caches); default ~/.chunklens")
    parser.add_argument("--out", type=Path, help="write the sweep's JSON here")
    parser.add_argument("--render", type=Path, metavar="FOLDER",
                        help="write --md from the reports in FOLDER (docs/results), run nothing")
    parser.add_argument("--md", type=Path, default=Path("docs/RETRIEVAL.md"))
    args = parser.parse_args(argv)
    unknown = [s for s in args.sets.split(",") if s and s not in SETS]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)} (use {', '.join(SETS)})")
    if args.render:
        args.md.write_text(render(args.render), encoding="utf-8")
        print(f"wrote {args.md}", file=sys.stderr)
        return 0

    from core.cli.flags import quiet_libraries
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.ingest.datasets import load_dataset
    from core.services import build_services, needs_of
    from core.settings import Settings
    from core.store.retrieval import RetrievalSettings

    quiet_libraries()
    specs = [s for s in args.chunkers.split(",") if s]
    settings = Settings.model_validate({"long_text": args.long_text,
                                        **({"embedder": args.embedder} if args.embedder else {}),
                                        **({"workspace": str(args.workspace)} if args.workspace else {})})
    services = build_services(settings, needs=needs_of(specs))
    ks = sorted({int(k) for k in args.k.split(",") if k} | {10})
    grid = settings_grid([float(w) for w in args.weights.split(",")])
    reports: dict[str, dict[str, dict[str, Any]]] = {}
    for set_name in [s for s in args.sets.split(",") if s]:
        folder, qualify = SETS[set_name]
        dataset = load_dataset(ROOT / folder if folder.startswith("sample_data") else args.shared / folder)
        reports[set_name] = {}
        for label, kwargs in grid:
            print(f"{set_name}: {label}", file=sys.stderr, flush=True)
            options = BenchOptions(ks, qualify, False, retrieval=RetrievalSettings(**kwargs))
            # the per-question sources are the bulk of a report: left out here
            reports[set_name][label] = bench_dataset(dataset, specs, options, services).without_sources().to_json()
        print("\n".join(_set_table(set_name, reports[set_name])))
    choice = choose_weights(reports)
    for fusion, best in choice["best"].items():
        print(f"best lexical weight for {fusion}: {best['lexical_weight']:g} "
              f"(mean MRR@10 over every set and chunker {best['mean_mrr@10']:.3f})")
    print(f"dense: {choice['means']['dense']:.3f}, bm25: {choice['means']['bm25']:.3f}")
    if args.out:
        command = "python -m bench.retrieval " + " ".join(argv if argv is not None else sys.argv[1:])
        write_study(args.out, {"command": command, "long_text": args.long_text, "chunkers": specs,
                               "choice": choice, "reports": reports})
    return 0


if __name__ == "__main__":
    sys.exit(main())
