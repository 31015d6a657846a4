"""How right, wrong and unknown CHOP's CNM tags are on every set with gold tags, without embedding anything.

    python -m bench.cnm [--sets sample,sample_joined,eurorack,eurorack_joined,galaxy,galaxy_joined,debian]
                        [--backend extract|rule] [--one-example] [--examples ID[,ID]] [--json OUT]
                        [--folder DIR --gold FILE.json ...]

Each set is cut by `chop` with the chosen CNM backend (`extract` by default, the app's default), and every chunk's
category and model are compared with its document's gold tag by `core.methods.chop.accuracy` (the same code a
bench run reports as `cnm_<part>_right/_wrong/_unknown`): right when the part matches, wrong when it is given and
does not, unknown when it is empty. A wrong tag is the costly one: the filter trusts it and the prefix embeds it.

The sets: the project's sample manuals, ../shared/data's eurorack_modules (gold in its corpus) and emanual_galaxy
(gold in docs/gold/emanual_galaxy.json), each as separate documents and as one joined stream, and the two Debian
PDF manuals of tests/fixtures/debian, each uploaded alone. A set whose data is absent is skipped with a line.
`--folder` adds a folder of your own manuals, loaded as uploads, with gold tags from its `--gold` file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import run_cli, write_study
from core.methods.chop.evidence import measured_confidence
from core.schema.documents import documents_by_id

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEBIAN = ROOT / "tests" / "fixtures" / "debian"
SETS = ("sample", "sample_joined", "eurorack", "eurorack_joined", "galaxy", "galaxy_joined", "debian")


def _dataset(name: str) -> list[Any] | None:
    """The documents (with gold tags) of one set, joined into a stream for a `_joined` name; None when absent."""
    from core.ingest.datasets import attach_gold, joined, load_dataset
    from core.workbench import sample_folder

    base = name.removesuffix("_joined")
    if base == "debian":
        return _debian()
    folder = {"sample": sample_folder(), "eurorack": SHARED / "eurorack_modules",
              "galaxy": SHARED / "emanual_galaxy"}[base]
    if not folder.exists():
        return None
    data = load_dataset(folder)
    if base == "galaxy":
        data = attach_gold(data, ROOT / "docs" / "gold" / "emanual_galaxy.json")
    return joined(data).documents if name.endswith("_joined") else data.documents


def _debian() -> list[Any]:
    from core.infra.jsonio import loads_checked
    from core.ingest.documents import load_file

    gold = loads_checked((DEBIAN / "gold.json").read_bytes())["documents"]
    return [replace(load_file(DEBIAN / name), cnm={"category": g["category"], "model": g["model"]})
            for name, g in gold.items()]


def folder_set(folder: Path, gold: Path) -> list[Any]:
    """Every file of `folder` the app can load, as uploads are (the title is the file's name), with gold tags
    from `gold`: a JSON object `{doc id or file name: {"category": ..., "model": ...}}`. A family of your own
    manuals, measured the way the sets above are."""
    from core.infra.jsonio import loads_checked
    from core.ingest.datasets import gold_cnm
    from core.ingest.documents import SUPPORTED_SUFFIXES, load_file

    tags = loads_checked(gold.read_bytes())
    docs = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in SUPPORTED_SUFFIXES):
        doc = load_file(path)
        g = tags.get(doc.doc_id) or tags.get(path.name) or tags.get(path.stem)
        docs.append(replace(doc, cnm=gold_cnm(g, f"{gold}: {path.name}")) if g else doc)
    return docs


def _backend(name: str) -> Any:
    if name == "rule":
        from core.methods.chop.rules import RuleCnm

        return RuleCnm()
    from core.methods.chop.extract import ExtractCnm

    return ExtractCnm()


def measure(documents: Sequence[Any], backend: str, alone: bool = False, examples: bool = False,
            given: Sequence[str] = ()) -> dict[str, Any]:
    """Right / wrong / unknown shares of one set; `alone` cuts each document as its own library (an upload).
    `examples`: also the shares on the other manuals after one manual's gold tag is given as a correction
    (`core.methods.chop.family`), over every choice of that manual: their mean and their worst."""
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.methods.chop.accuracy import by_source
    from core.pipeline import chunk_documents

    t0 = time.perf_counter()
    libraries = [[d] for d in documents] if alone else [list(documents)]
    chunks = [c for lib in libraries
              for c in chunk_documents(lib, make_chunker("chop", ChunkerContext(llm=_backend(backend)))).chunks]
    out: dict[str, Any] = {"documents": len(documents), **_shares(chunks, documents),
                           "seconds": round(time.perf_counter() - t0, 2), "by_source": by_source(chunks, documents)}
    if examples and not alone:
        out["one_example"] = one_example(chunks, documents)
    golds = _golds(documents)
    if given and not alone and set(given) <= set(golds):
        out["given_examples"] = with_examples(chunks, documents, {m: golds[m] for m in given})
    return out


def with_examples(chunks: Sequence[Any], documents: Sequence[Any],
                  examples: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The shares on the manuals not in `examples` after they are given as corrections, in the order given and
    in the reverse order (the two must agree)."""
    from core.methods.chop.family import manual_of, teach

    docs = documents_by_id(documents)
    out: dict[str, Any] = {"examples": list(examples)}
    for label, order in (("given_order", examples), ("reversed_order", dict(reversed(list(examples.items()))))):
        taught, _ = teach(chunks, documents, order)
        out[label] = _shares([c for c in taught if manual_of(c, docs) not in examples], documents)
    return out


def _shares(chunks: Sequence[Any], documents: Sequence[Any]) -> dict[str, Any]:
    from core.methods.chop.accuracy import cnm_accuracy

    acc = cnm_accuracy(chunks, documents)
    out: dict[str, Any] = {"chunks": acc.chunks if acc else 0}
    for part in ("category", "model"):
        shares = getattr(acc, part) if acc else None
        out[part] = None if shares is None else {k: round(getattr(shares, k), 3) for k in ("right", "wrong", "unknown")}
    return out


def merge_counts(*tables: dict[str, dict[str, dict[str, int]]]) -> dict[str, dict[str, dict[str, int]]]:
    """`by_source` tables added up, part by part and kind by kind."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for table in tables:
        for part, kinds in table.items():
            for kind, counts in kinds.items():
                held = out.setdefault(part, {}).setdefault(kind, {"right": 0, "wrong": 0, "unknown": 0})
                for verdict, n in counts.items():
                    held[verdict] += n
    return out


def pooled_by_source(results: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Every set's `by_source` counts added up over both parts: per kind of evidence, how many parts it gave right
    and wrong, each chunk counted once. A family correction's counts come from the one-example runs (each manual's
    correction in turn, counted on the other manuals' chunks), the only runs that have them.
    `core.methods.chop.evidence.CONFIDENCE` is read from it."""
    from core.methods.chop.evidence import FAMILY

    tables = [r["by_source"] for r in results.values() if r.get("by_source")]
    taught = [r["one_example"]["by_source"] for r in results.values() if (r.get("one_example") or {}).get("by_source")]
    tables += [{part: {k: n for k, n in kinds.items() if k == FAMILY} for part, kinds in t.items()} for t in taught]
    both_parts = merge_counts(*({"both": kinds} for table in tables for kinds in table.values()))
    return dict(sorted(both_parts.get("both", {}).items()))


def _golds(documents: Sequence[Any]) -> dict[str, dict[str, str]]:
    """Every manual's gold tag by id: a document's, or each source document's in a stream."""
    out = {}
    for d in documents:
        for part in d.segments or [d]:
            if part.cnm:
                out[part.doc_id] = dict(part.cnm)
    return out


def one_example(chunks: Sequence[Any], documents: Sequence[Any]) -> dict[str, Any]:
    """For each manual in turn, its gold tag given as the only correction: the shares on the other manuals' chunks.
    Returns the mean and the worst (lowest right) share of each part over those choices."""
    from core.methods.chop.accuracy import by_source
    from core.methods.chop.family import manual_of, teach

    docs = documents_by_id(documents)
    runs: dict[str, list[dict[str, Any]]] = {"category": [], "model": []}
    sources: dict[str, dict[str, dict[str, int]]] = {}
    for manual, gold in _golds(documents).items():
        taught, _ = teach(chunks, documents, {manual: gold})
        others = [c for c in taught if manual_of(c, docs) != manual]
        sources = merge_counts(sources, by_source(others, documents))
        shares = _shares(others, documents)
        for part in runs:
            if shares[part] is not None:
                runs[part].append(shares[part])
    out: dict[str, Any] = {"examples": len(_golds(documents)), "by_source": sources}
    for part, got in runs.items():
        if got:
            mean = {k: round(sum(g[k] for g in got) / len(got), 3) for k in ("right", "wrong", "unknown")}
            ranked = sorted(got, key=lambda g: g["right"])
            out[part] = {"mean": mean, "median": ranked[len(ranked) // 2], "worst": ranked[0]}
    return out


def study(sets: Sequence[str], backend: str, say: Callable[[str], None] = print,
          examples: bool = False, given: Sequence[str] = (),
          folders: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    folders = folders or {}
    for name in [*sets, *folders]:
        documents = folders[name] if name in folders else _dataset(name)
        if documents is None:
            say(f"{name}: no data, skipped")
            continue
        results[name] = measure(documents, backend, alone=name == "debian", examples=examples, given=given)
    return {"backend": backend, "results": results, "by_source": pooled_by_source(results)}


def text(report: dict[str, Any]) -> str:
    def cell(shares: dict[str, float] | None) -> str:
        return "-" if shares is None else f"{shares['right']:.2f} / {shares['wrong']:.2f} / {shares['unknown']:.2f}"

    lines = [f"CNM backend {report['backend']}: right / wrong / unknown share of the chunks with a gold part",
             f"{'set':16} {'docs':>4} {'chunks':>6}  {'category':>18}  {'model':>18}  seconds"]
    for name, r in report["results"].items():
        lines.append(f"{name:16} {r['documents']:>4} {r['chunks']:>6}  {cell(r['category']):>18}  "
                     f"{cell(r['model']):>18}  {r['seconds']:.1f}")
    taught = {name: r["one_example"] for name, r in report["results"].items() if r.get("one_example")}
    if taught:
        lines += ["", "one manual's gold tag given as a correction, shares on the other manuals: mean over every "
                      "choice of that manual (right share: median choice, worst choice)",
                  f"{'set':16} {'examples':>8}  {'category':>38}  {'model':>38}"]
        for name, t in taught.items():
            def both(part: str, t: dict[str, Any] = t) -> str:
                got = t.get(part)
                return "-" if got is None else (f"{cell(got['mean'])} ({got['median']['right']:.2f}, "
                                                f"{got['worst']['right']:.2f})")
            lines.append(f"{name:16} {t['examples']:>8}  {both('category'):>38}  {both('model'):>38}")
    if report.get("by_source"):
        lines += ["", "each kind of evidence, pooled over the sets above (a family correction's over their one-example "
                      "runs): parts it gave right / wrong, its precision, and the lower end of its 95% interval "
                      "(core.methods.chop.evidence.CONFIDENCE)",
                  f"{'evidence':24} {'right':>7} {'wrong':>7}  precision  confidence"]
        for kind, n in report["by_source"].items():
            given = n["right"] + n["wrong"]
            if given:
                lines.append(f"{kind:24} {n['right']:>7} {n['wrong']:>7}  {n['right'] / given:>9.3f}  "
                             f"{measured_confidence(n['right'], n['wrong']):>10.2f}")
    for name, r in report["results"].items():
        if r.get("given_examples"):
            g = r["given_examples"]
            given, reverse = g["given_order"], g["reversed_order"]
            lines.append(f"{name}: corrections of {', '.join(g['examples'])}: category {cell(given['category'])} "
                         f"(reversed order {cell(reverse['category'])}), model {cell(given['model'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), type=lambda v: [s for s in v.split(",") if s])
    parser.add_argument("--backend", default="extract", choices=("extract", "rule"))
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--one-example", action="store_true",
                        help="also give each manual's gold tag in turn as the only correction and measure the others")
    parser.add_argument("--examples", default="", type=lambda v: [x for x in v.split(",") if x], metavar="ID[,ID]",
                        help="also give these manuals' gold tags as corrections, in a set that holds them all")
    parser.add_argument("--folder", type=Path, action="append", default=[], metavar="DIR",
                        help="also measure the manuals of this folder (repeatable; gold tags from --gold)")
    parser.add_argument("--gold", type=Path, action="append", default=[], metavar="FILE.json",
                        help="gold tags of the n-th --folder: {doc id or file name: {category, model}}")
    args = parser.parse_args(argv)
    if len(args.gold) != len(args.folder):
        parser.error("give one --gold file for each --folder")
    unknown = sorted(set(args.sets) - set(SETS))
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    folders = {f"folder:{d.name}": folder_set(d, g) for d, g in zip(args.folder, args.gold)}
    report = study(args.sets, args.backend, say=lambda line: print(line, file=sys.stderr), examples=args.one_example,
                   given=args.examples, folders=folders)
    print(text(report))
    write_study(args.json, report)


if __name__ == "__main__":
    sys.exit(run_cli(main))
