"""Which BM25 analyzer: measured on every question-answering set we have, not chosen on one.

Usage: .venv/bin/python scripts/analyzer_study.py [--grid factors|full] [--shared ../shared/data]
                                                  [--chunkers naive-500t,...] [--out docs/results/analyzer_study.json]

Why: the analyzer decides which words a question and a chunk share, so it moves BM25 (and the hybrid default,
whose lexical side weighs 0.9) more than most other settings, and it was first picked on a few of our own sets.
Here every analyzer indexes the same `naive-500t` chunks (the text each chunk is indexed with, prefix included,
`Chunk.embed_text`) with the project's BM25 (`core.store.lexical.LexicalIndex`, same k1, b and ranking), and
every question is scored against its gold spans by the bench's own evaluation (`core.evaluation.relevance`), so
hit@1, hit@10 and MRR@10 mean what they mean in `python -m core bench --retrieval bm25`.

Sets: every qa-spans folder under the shared data folder and the project's sample set; a set whose questions name
their product (`product`) is also measured with product-named questions, as `--qualify-queries` asks them.

Analyzers: all NFKC-normalise and case-fold, and turn CJK runs into character bigrams as `lexical_tokens` does.
They differ in four factors:
- one-character tokens: keep, or drop single Latin letters and digits (CJK characters are never dropped);
- stemming: none, Snowball English (PyStemmer), or light (plural "s" / "es" / "ies" only);
- stop words: bm25s's English list, or none;
- model numbers: split at hyphens ("SM-G973F" -> "sm", "g973f"), also the joined form of a hyphenated run
  holding a digit ("smg973f"), or also split where letters meet digits ("s10e" -> "s", "10", "e").
`t1` is the analyzer the project shipped first (keep, Snowball, English stop words, split). The default grid
changes one factor of `t1` at a time and adds the combination of each factor's best level (by mean hit@1);
`--grid full` measures all 36 combinations (about 4 minutes on two cores, against 1). bm25s's own tokenizer
(`bm25s.tokenize`: `\\b\\w\\w+\\b`, lower-cased, English stop words, no stemmer, no CJK bigrams) is a reference row,
not a candidate.

Chunkers: `naive-500t` alone by default (docs/results/analyzer_study.json). `--chunkers a,b,...` measures every
analyzer on each chunker's chunks of the same sets (a chunker that needs an embedder, such as `semantic`, gets the
app's default services, and its chunk runs are cached in the workspace as the bench caches them), since how much a
stemmer or a dropped token matters depends on how many words a chunk has. With more than one chunker the JSON holds
one study per chunker (every analyzer measured on all of them) and `across`: each analyzer's mean over the chunkers
and sets, its mean per chunker, its worst loss against `t1` on one chunker's set, and the choice made by the same
rule over every (chunker, set) pair.

Choice: the candidate with the best mean hit@1 over the sets among those never more than 0.02 hit@1 and 0.02
hit@10 behind the best candidate on any one set; when none is, the one whose worst such loss is smallest (and the
report says which constraint binds where). The JSON keeps every figure; docs/RETRIEVAL.md renders it
(`python -m bench.retrieval --render docs/results`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.catalog  # noqa: E402, F401  (the composition root: every chunker, method and service)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# the CJK ranges, stop words, stemmer and one-character rule lexical_tokens uses, so the variants differ only where
# they say they do
from core.store.lexical import _CJK, _latin_or_digit, _stemmer, _stopwords  # noqa: E402

CHUNKER = "naive-500t"  # the default chunker, the one docs/results/analyzer_study.json was measured on
KS = (1, 10)
MAX_LOSS = 0.02  # hit@1 and hit@10 a choice may lose to the best candidate on any one set
REFERENCE = "bm25s default"
#: evidence from outside these sets: on held-out real manuals (a product manual among near-duplicates, 642
#: product-named questions, naive-500t, bm25s), dropping one-character tokens gained 0.15 hit@1 over t1. That change
#: is adopted unless these sets measure a loss for it: a mean hit@1 or mean hit@10 more than NO_HARM below t1's.
#: (The same measurement gave about 0.02 for dropping the stemmer too; over five chunkers it cost hit@10 on
#: covid_qa under every one of them, `--chunkers`, so it is not part of the prior.)
PRIOR = {"one_char": "drop"}
NO_HARM = 0.01

FACTORS: dict[str, tuple[str, ...]] = {
    "one_char": ("keep", "drop"),
    "stem": ("snowball", "none", "light"),
    "stop": ("en", "none"),
    "models": ("split", "join", "letters-digits"),
}

_WORD = rf"[^\W_{_CJK}]+"
_HYPHENS = "-\u2010\u2011"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD}(?:[{_HYPHENS}]{_WORD})*)")
_PARTS = re.compile(rf"[{_HYPHENS}]")
_LETTERS_DIGITS = re.compile(r"\d+|[^\W\d_]+")


def light_stem(word: str) -> str:
    """Plural endings only: "batteries" -> "battery", "switches" -> "switch", "filters" -> "filter"; words of
    three letters or fewer, words with digits and "-ss", "-us", "-is" endings stay as they are."""
    if len(word) <= 3 or word[-1] != "s" or not word.isalpha() or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    return word[:-1]


@dataclass(frozen=True)
class Variant:
    """One analyzer of the grid; the defaults are `t1`."""

    one_char: str = "keep"
    stem: str = "snowball"
    stop: str = "en"
    models: str = "split"

    @property
    def label(self) -> str:
        changed = [f"{k}={v}" for k, v in asdict(self).items() if v != getattr(T1, k)]
        return " + ".join(changed) if changed else "t1"

    def __call__(self, text: str) -> list[str]:
        stop = _stopwords() if self.stop == "en" else frozenset()
        out: list[tuple[bool, str]] = []  # (is a word, token): words are stemmed below, CJK bigrams are not
        for m in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
            run = m.group()
            if m.lastgroup == "cjk":
                out.extend((False, run[i : i + 2]) for i in range(max(1, len(run) - 1)))
                continue
            parts = _PARTS.split(run)
            words = ([w for p in parts for w in _LETTERS_DIGITS.findall(p)] if self.models == "letters-digits"
                     else list(parts))
            if self.models == "join" and len(parts) > 1 and any(c.isdigit() for c in run):
                words.append("".join(parts))
            for w in words:
                if w in stop or (self.one_char == "drop" and len(w) == 1 and _latin_or_digit(w)):
                    continue
                out.append((True, w))
        if self.stem == "snowball":
            stems = iter(_stemmer().stemWords([t for is_word, t in out if is_word]))
            return [next(stems) if is_word else t for is_word, t in out]
        if self.stem == "light":
            return [light_stem(t) if is_word else t for is_word, t in out]
        return [t for _, t in out]


T1 = Variant()


def bm25s_default(text: str) -> list[str]:
    import bm25s

    return bm25s.tokenize(text, stopwords="en", return_ids=False, show_progress=False)[0]


# -- the sets ---------------------------------------------------------------------------------------------------


@dataclass
class StudySet:
    name: str
    qualified: bool
    dataset: Any  # core.ingest.datasets.QADataset
    units: list[Any]  # the chunks indexed (core.chunkers.base.Chunk)
    spans: list[Any]  # the chunk run's spans, for the ideal counts of the evaluation
    queries: list[str]


def load_datasets(shared: Path) -> list[tuple[str, Any]]:
    """(name, QADataset) of every qa-spans folder under `shared`, then the project's sample set."""
    from core.ingest.datasets import load_dataset
    from core.workbench import sample_folder

    folders = sorted(p for p in shared.iterdir() if (p / "questions.jsonl").is_file()) if shared.is_dir() else []
    return [(name, load_dataset(folder)) for folder, name in [*((f, f.name) for f in folders),
                                                                (sample_folder(), "sample")]]


def chunker_context(chunkers: Sequence[str]) -> tuple[Any, Path | None]:
    """The services the chunkers need, built as the bench builds them from the app's default settings, and the
    workspace's chunk-run cache; none (and no cache) when no chunker needs a service."""
    from core.chunkers.base import ChunkerContext
    from core.services import build_services, needs_of
    from core.settings import Settings

    needs = needs_of(chunkers)  # a bad spec fails here, before any slow work
    if not needs:
        return ChunkerContext(), None
    services = build_services(Settings(), needs=needs)
    return services.context(), services.workspace.chunk_runs


def load_sets(datasets: Sequence[tuple[str, Any]], chunker: str = CHUNKER, context: Any = None,
              cache: Path | None = None) -> list[StudySet]:
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.pipeline import chunk_documents

    sets: list[StudySet] = []
    for name, dataset in datasets:
        started = time.perf_counter()
        run = chunk_documents(dataset.documents, make_chunker(chunker, context or ChunkerContext()), cache)
        if run.children():
            raise SystemExit(f"{chunker} is expected to index its chunks, not children")
        named = any(q.product for q in dataset.questions)
        for qualified in (False, True) if named else (False,):
            sets.append(StudySet(f"{name} (product-named)" if qualified else name, qualified, dataset,
                                 run.index_units(), run.spans(), [q.text(qualified) for q in dataset.questions]))
        print(f"{chunker} / {name}: {len(dataset.documents)} documents, {len(run.chunks)} chunks, "
              f"{len(dataset.questions)} questions" + (", also product-named" if named else "")
              + f" ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return sets


# -- measuring --------------------------------------------------------------------------------------------------


def measure(study_set: StudySet, analyzer: Callable[[str], list[str]]) -> dict[str, float]:
    """hit@1, hit@10, MRR@10 of BM25 with this analyzer over the set's chunks, as the bench scores them."""
    from core.evaluation.relevance import evaluate, source_resolver
    from core.store.lexical import LexicalIndex

    index = LexicalIndex.build(study_set.units, analyzer)
    by_id = {c.chunk_id: c for c in study_set.units}
    k = max(KS)
    retrieved = []
    for query in study_set.queries:
        found = index.search(query, k)
        retrieved.append([by_id[cid].span for cid, _ in found])
    refs = [(q.qid, q.references) for q in study_set.dataset.questions]
    scores, _ = evaluate(refs, retrieved, study_set.spans, KS, source_resolver(study_set.dataset.documents))
    return {"hit@1": scores["hit@1"], "hit@10": scores["hit@10"], "mrr@10": scores["mrr@10"],
            "n": len(study_set.queries)}


def same_tokens(sets: Sequence[StudySet], analyzer: Callable[[str], list[str]]) -> bool:
    """Whether `analyzer` gives core's `lexical_tokens` on every chunk and question of the sets."""
    from core.store.lexical import lexical_tokens

    texts = {t for s in sets for t in itertools.chain((c.embed_text for c in s.units), s.queries)}
    return all(analyzer(t) == lexical_tokens(t) for t in texts)


def mean_of(results: dict[str, dict[str, dict[str, float]]], label: str, metric: str) -> float:
    return statistics.fmean(per_set[label][metric] for per_set in results.values())


def best_level(results: dict[str, dict[str, dict[str, float]]], variants: dict[str, Variant],
               factor: str) -> str:
    """The level of `factor` whose one-factor variant of t1 has the best mean hit@1 (t1's level on a tie)."""
    options = [(T1, getattr(T1, factor))] + [(replace(T1, **{factor: lv}), lv) for lv in FACTORS[factor][1:]]
    measured = [(mean_of(results, v.label, "hit@1"), -i, lv) for i, (v, lv) in enumerate(options)
                if v.label in variants]
    return max(measured)[2]


def _failing_counts(rows: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many candidates fail the hit@1 constraint and how many the hit@10 one (a candidate may fail both)."""
    return {m: sum(1 for r in rows.values() if any(v["metric"] == m for v in r["violations"]))
            for m in ("hit@1", "hit@10")}


def rule_winner(by_mean: Sequence[str], rows: dict[str, dict[str, Any]]) -> str:
    passing = [c for c in by_mean if not rows[c]["violations"]]
    return passing[0] if passing else min(by_mean, key=lambda c: (max(rows[c]["worst_hit@1_loss"],
                                                                      rows[c]["worst_hit@10_loss"]), by_mean.index(c)))


def choose(results: dict[str, dict[str, dict[str, float]]], candidates: Sequence[str]) -> dict[str, Any]:
    """The candidate best on mean hit@1 among those within MAX_LOSS hit@1 and hit@10 of the best candidate on
    every set; without one, the candidate with the smallest worst loss, and which constraint binds where."""
    best = {s: {m: max(per_set[c][m] for c in candidates) for m in ("hit@1", "hit@10")}
            for s, per_set in results.items()}
    rows: dict[str, dict[str, Any]] = {}
    for c in candidates:
        losses = {m: {s: best[s][m] - results[s][c][m] for s in results} for m in ("hit@1", "hit@10")}
        worst = {m: max(v.items(), key=lambda kv: kv[1]) for m, v in losses.items()}
        rows[c] = {"mean_hit@1": mean_of(results, c, "hit@1"), "mean_hit@10": mean_of(results, c, "hit@10"),
                   "mean_mrr@10": mean_of(results, c, "mrr@10"),
                   "worst_hit@1_loss": worst["hit@1"][1], "worst_hit@1_set": worst["hit@1"][0],
                   "worst_hit@10_loss": worst["hit@10"][1], "worst_hit@10_set": worst["hit@10"][0],
                   "violations": [{"metric": m, "set": s, "loss": loss} for m, per in losses.items()
                                  for s, loss in per.items() if loss > MAX_LOSS + 1e-9]}
    by_mean = sorted(candidates, key=lambda c: (-rows[c]["mean_hit@1"], -rows[c]["mean_hit@10"],
                                                -rows[c]["mean_mrr@10"], candidates.index(c)))
    passing = [c for c in by_mean if not rows[c]["violations"]]
    top = by_mean[0]
    if passing:
        winner, rule = passing[0], (f"best mean hit@1 among the candidates within {MAX_LOSS} hit@1 and hit@10 "
                                    "of the best on every set")
    else:
        winner = min(by_mean, key=lambda c: (max(rows[c]["worst_hit@1_loss"], rows[c]["worst_hit@10_loss"]),
                                             by_mean.index(c)))
        rule = (f"no candidate is within {MAX_LOSS} hit@1 and hit@10 of the best on every set: the one whose "
                "worst loss is smallest")
    prior = replace(T1, **PRIOR).label
    harmless = prior in rows and all(rows[prior][f"mean_{m}"] >= rows["t1"][f"mean_{m}"] - NO_HARM
                                     for m in ("hit@1", "hit@10"))
    if harmless:
        winner = prior
        rule = (f"the held-out measurement's large gain (one-character tokens dropped), since on these sets it costs "
                f"at most {NO_HARM} mean hit@1 and hit@10 against t1; the margin rule alone would pick "
                f"`{rule_winner(by_mean, rows)}`")
    return {"winner": winner, "rule": rule, "winner_violations": rows[winner]["violations"], "best_mean": top,
            "best_mean_violations": rows[top]["violations"],
            "max_loss": MAX_LOSS, "no_harm": NO_HARM, "candidates_failing": _failing_counts(rows),
            "best_per_set": best, "candidates": rows}


#: measured on every chunker whatever the grid, so the across-chunkers summary always compares them: t1, its two
#: held-out gains alone and together (the shipped analyzer)
ALWAYS = (T1, replace(T1, stem="none"), replace(T1, one_char="drop"), replace(T1, **PRIOR))


def run_grid(sets: Sequence[StudySet], grid: str, also: Sequence[Variant] = ()) -> tuple[
        dict[str, dict[str, dict[str, float]]], dict[str, Variant]]:
    """The grid's variants measured on every set (and the variants of `also`, after the grid's)."""
    variants: dict[str, Variant] = {}
    results: dict[str, dict[str, dict[str, float]]] = {s.name: {} for s in sets}

    def run(variant: Variant) -> None:
        if variant.label in variants:
            return
        started = time.perf_counter()
        variants[variant.label] = variant
        for s in sets:
            results[s.name][variant.label] = measure(s, variant)
        print(f"  {variant.label}: mean hit@1 {mean_of(results, variant.label, 'hit@1'):.3f} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    if grid == "full":
        for levels in itertools.product(*FACTORS.values()):
            run(Variant(**dict(zip(FACTORS, levels))))
    else:
        run(T1)
        for factor, levels in FACTORS.items():
            for level in levels[1:]:
                run(replace(T1, **{factor: level}))
        run(Variant(**{f: best_level(results, variants, f) for f in FACTORS}))  # measured already when one won
        run(replace(T1, **PRIOR))
    for variant in also:
        run(variant)
    return results, variants


def study_of(sets: Sequence[StudySet], chunker: str, grid: str, also: Sequence[Variant] = ()) -> dict[str, Any]:
    """One chunker's study: the grid on its chunks of every set, the reference row and the choice."""
    print(f"{chunker}:", file=sys.stderr, flush=True)
    results, variants = run_grid(sets, grid, also)
    for s in sets:
        results[s.name][REFERENCE] = measure(s, bm25s_default)
    core_same = [label for label, v in variants.items() if same_tokens(sets, v)]
    return {
        "chunker": chunker, "grid": grid, "reference": REFERENCE,
        "sets": {s.name: {"dataset": s.dataset.name, "product_named": s.qualified, "n_documents":
                          len(s.dataset.documents), "n_chunks": len(s.units), "n_questions": len(s.queries)}
                 for s in sets},
        "variants": {label: asdict(v) for label, v in variants.items()},
        "results": results,
        "choice": choose(results, list(variants)),
        "core_same": core_same,
    }


def extend(study: dict[str, Any], sets: Sequence[StudySet], variants: Sequence[Variant]) -> None:
    """Measure more variants in a chunker's study (before its reference row) and make its choice again."""
    if not variants:
        return
    for v in variants:
        study["variants"][v.label] = asdict(v)
        for s in sets:
            study["results"][s.name][v.label] = measure(s, v)
        print(f"  {study['chunker']} also: {v.label}: mean hit@1 {mean_of(study['results'], v.label, 'hit@1'):.3f}",
              file=sys.stderr, flush=True)
    for s in sets:  # the reference row last again, as the tables list it
        study["results"][s.name][REFERENCE] = study["results"][s.name].pop(REFERENCE)
    study["choice"] = choose(study["results"], list(study["variants"]))
    study["core_same"] += [v.label for v in variants if same_tokens(sets, v)]


def across(studies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every analyzer measured on every chunker, summed up over the (chunker, set) pairs: the mean over all of
    them and per chunker, the worst loss against t1 on one pair, and the study's choice rule over the pairs."""
    labels = [lb for lb in next(iter(studies.values()))["variants"] if all(lb in s["variants"]
                                                                          for s in studies.values())]
    pairs = {f"{chunker} / {s}": per_set for chunker, study in studies.items()
             for s, per_set in study["results"].items()}
    metrics = ("hit@1", "hit@10", "mrr@10")
    summary: dict[str, Any] = {}
    for label in [*labels, REFERENCE]:
        row: dict[str, Any] = {"mean": {m: mean_of(pairs, label, m) for m in metrics},
                               "per_chunker": {c: {m: mean_of(st["results"], label, m) for m in metrics}
                                               for c, st in studies.items()}}
        for m in ("hit@1", "hit@10"):
            pair, loss = max(((p, r["t1"][m] - r[label][m]) for p, r in pairs.items()), key=lambda kv: kv[1])
            row[f"worst_{m}_loss_to_t1"], row[f"worst_{m}_pair"] = loss, pair
        summary[label] = row
    return {"n_pairs": len(pairs), "analyzers": summary, "choice": choose(pairs, labels)}


def across_table(summary: dict[str, Any], chunkers: Sequence[str]) -> list[str]:
    """The across-chunkers summary as Markdown: hit@1 / hit@10 per chunker and over all, and the worst loss to t1."""
    choice = summary["choice"]
    lines = [f"Across {len(chunkers)} chunkers ({summary['n_pairs']} chunker-set pairs); each cell hit@1 / hit@10, "
             "mean over the chunker's sets; a loss to t1 is on the one pair where it is largest.", "",
             "| analyzer | " + " | ".join(f"`{c}`" for c in chunkers) + " | all | worst hit@1 loss to t1 | "
             "worst hit@10 loss to t1 | worst loss to the best |", "|---|" + "---|" * (len(chunkers) + 4)]
    for label, row in summary["analyzers"].items():
        cells = [f"{row['per_chunker'][c]['hit@1']:.3f} / {row['per_chunker'][c]['hit@10']:.3f}" for c in chunkers]
        cells.append(f"{row['mean']['hit@1']:.3f} / {row['mean']['hit@10']:.3f}")
        cells += [f"{row[f'worst_{m}_loss_to_t1']:+.3f} ({row[f'worst_{m}_pair']})" for m in ("hit@1", "hit@10")]
        cand = choice["candidates"].get(label)
        cells.append(f"{cand['worst_hit@1_loss']:.3f} / {cand['worst_hit@10_loss']:.3f}" if cand else "")
        name = f"**`{label}`**" if label == choice["winner"] else f"`{label}`"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines + ["", f"Chosen over the pairs: `{choice['winner']}` ({choice['rule']}); best mean hit@1: "
                    f"`{choice['best_mean']}`.", ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data",
                        help="the shared data folder (every qa-spans folder in it is measured)")
    parser.add_argument("--grid", choices=["factors", "full"], default="factors",
                        help="factors (default): one factor of t1 at a time and the best levels combined; full: every "
                             "combination")
    parser.add_argument("--chunkers", default=CHUNKER,
                        help=f"comma-separated chunker specs whose chunks are indexed (default {CHUNKER}); with more "
                             "than one, also the mean over chunkers and sets per analyzer")
    parser.add_argument("--out", type=Path, help="write the JSON here (docs/results/analyzer_study.json)")
    args = parser.parse_args(argv)
    chunkers = [c.strip() for c in args.chunkers.split(",") if c.strip()]
    if not chunkers or len(set(chunkers)) != len(chunkers):
        parser.error("--chunkers wants one or more distinct chunker specs")

    from bench.retrieval import analyzer_tables
    from core.services import needs_of
    from core.store.lexical import BM25_PARAMS, TOKENIZER_VERSION

    started = time.perf_counter()
    context, cache = chunker_context(chunkers)
    datasets = load_datasets(args.shared)
    all_sets = {c: load_sets(datasets, c, context, cache if needs_of([c]) else None) for c in chunkers}
    studies: dict[str, dict[str, Any]] = {}
    also: list[Variant] = list(ALWAYS) if len(chunkers) > 1 else []
    for c in chunkers:
        studies[c] = study_of(all_sets[c], c, args.grid, also)
    if len(chunkers) > 1:  # a variant one chunker's grid chose (best levels combined) is measured on all of them
        union = {lb: Variant(**v) for st in studies.values() for lb, v in st["variants"].items()}
        for c in chunkers:
            extend(studies[c], all_sets[c], [v for lb, v in union.items() if lb not in studies[c]["variants"]])
    command = ".venv/bin/python scripts/analyzer_study.py " + " ".join(argv if argv is not None else sys.argv[1:])

    def finished(study: dict[str, Any]) -> dict[str, Any]:
        core_same = study.pop("core_same")
        return {"command": command, "chunker": study["chunker"], "bm25": BM25_PARAMS,
                **{k: v for k, v in study.items() if k != "chunker"},
                "core_tokenizer": {"version": TOKENIZER_VERSION, "same_tokens_as": core_same}}

    if len(chunkers) == 1:
        out = finished(studies[chunkers[0]])
        out["seconds"] = round(time.perf_counter() - started, 1)
        print("\n".join(analyzer_tables(out)))
    else:
        per = {c: finished(studies[c]) for c in chunkers}
        for c in chunkers:
            print(f"### `{c}`\n")
            print("\n".join(analyzer_tables(per[c])))
        summary = across({c: per[c] for c in chunkers})
        print("\n".join(across_table(summary, chunkers)))
        out = {"command": command, "chunkers": chunkers, "bm25": BM25_PARAMS, "grid": args.grid,
               "reference": REFERENCE, "across": summary, "studies": per,
               "seconds": round(time.perf_counter() - started, 1)}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
