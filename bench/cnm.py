"""How right, wrong and unknown CHOP's CNM tags are on every set with gold tags, without embedding anything.

    python -m bench.cnm [--sets sample,sample_joined,eurorack,eurorack_joined,galaxy,galaxy_joined,debian]
                        [--backend extract|rule] [--json OUT]

Each set is cut by `chop` with the chosen CNM backend (`extract` by default, the app's default), and every chunk's
category and model are compared with its document's gold tag by `core.methods.chop.accuracy` (the same code a
bench run reports as `cnm_<part>_right/_wrong/_unknown`): right when the part matches, wrong when it is given and
does not, unknown when it is empty. A wrong tag is the costly one: the filter trusts it and the prefix embeds it.

The sets: the project's sample manuals, ../shared/data's eurorack_modules (gold in its corpus) and emanual_galaxy
(gold in docs/gold/emanual_galaxy.json), each as separate documents and as one joined stream, and the two Debian
PDF manuals of tests/fixtures/debian, each uploaded alone. A set whose data is absent is skipped with a line.
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
    from core.ingest.documents import load_file
    from core.jsonio import loads_checked

    gold = loads_checked((DEBIAN / "gold.json").read_bytes())["documents"]
    return [replace(load_file(DEBIAN / name), cnm={"category": g["category"], "model": g["model"]})
            for name, g in gold.items()]


def _backend(name: str) -> Any:
    if name == "rule":
        from core.methods.chop.rules import RuleCnm

        return RuleCnm()
    from core.methods.chop.extract import ExtractCnm

    return ExtractCnm()


def measure(documents: Sequence[Any], backend: str, alone: bool = False) -> dict[str, Any]:
    """Right / wrong / unknown shares of one set; `alone` cuts each document as its own library (an upload)."""
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.methods.chop.accuracy import cnm_accuracy
    from core.pipeline import chunk_documents

    t0 = time.perf_counter()
    libraries = [[d] for d in documents] if alone else [list(documents)]
    chunks = [c for lib in libraries
              for c in chunk_documents(lib, make_chunker("chop", ChunkerContext(llm=_backend(backend)))).chunks]
    acc = cnm_accuracy(chunks, documents)
    out: dict[str, Any] = {"documents": len(documents), "chunks": acc.chunks if acc else 0,
                           "seconds": round(time.perf_counter() - t0, 2)}
    for part in ("category", "model"):
        shares = getattr(acc, part) if acc else None
        out[part] = None if shares is None else {k: round(getattr(shares, k), 3) for k in ("right", "wrong", "unknown")}
    return out


def study(sets: Sequence[str], backend: str, say: Callable[[str], None] = print) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in sets:
        documents = _dataset(name)
        if documents is None:
            say(f"{name}: no data, skipped")
            continue
        results[name] = measure(documents, backend, alone=name == "debian")
    return {"backend": backend, "results": results}


def text(report: dict[str, Any]) -> str:
    def cell(shares: dict[str, float] | None) -> str:
        return "-" if shares is None else f"{shares['right']:.2f} / {shares['wrong']:.2f} / {shares['unknown']:.2f}"

    lines = [f"CNM backend {report['backend']}: right / wrong / unknown share of the chunks with a gold part",
             f"{'set':16} {'docs':>4} {'chunks':>6}  {'category':>18}  {'model':>18}  seconds"]
    for name, r in report["results"].items():
        lines.append(f"{name:16} {r['documents']:>4} {r['chunks']:>6}  {cell(r['category']):>18}  "
                     f"{cell(r['model']):>18}  {r['seconds']:.1f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), type=lambda v: [s for s in v.split(",") if s])
    parser.add_argument("--backend", default="extract", choices=("extract", "rule"))
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.sets) - set(SETS))
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    report = study(args.sets, args.backend, say=lambda line: print(line, file=sys.stderr))
    print(text(report))
    write_study(args.json, report)


if __name__ == "__main__":
    sys.exit(run_cli(main))
