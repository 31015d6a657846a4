"""The tables of docs/SCALE.md, rendered from a committed `python -m bench.scale --executor ray` report, so the
document's figures are the report's and a rerun of the benchmark rewrites them with one command.

Two tables: the Ray stages per scale and worker count beside the local executor's, and the budget for a library
of 100,000 manuals on machines like the one measured, computed from the largest scale's fastest run (chunks per
manual from the 1x scale; the vectors/s and chunks/s of the run with the most workers).

Usage: .venv/bin/python -m bench.scale_doc docs/results/scale_ray.json [--write docs/SCALE.md]
(prints the Markdown; with --write, puts each block between its markers in the document)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the blocks SCALE.md carries, each between its own markers (`markers`)
BLOCKS = ("stages", "budget")
#: the library the budget is for, and the cluster sizes it is given for
MANUALS = 100_000
MACHINES = (1, 10, 50, 100)


def _num(value: float | None, form: str) -> str:
    return "n/a" if value is None else format(value, form)


def stages_table(ray: dict[str, Any]) -> list[str]:
    """Per scale: the local executor's row, then one row per Ray worker count with its speed-up over the fewest
    workers and its seconds over the local executor's (chunking / embedding)."""
    fewest = ray["workers"][0]
    lines = [f"| scale | workers | docs | chunks | chunking s | docs/s | chunks/s | embedding s | vectors/s | "
             f"speed-up over {fewest} worker{'s' if fewest > 1 else ''}, chunk / embed | "
             "Ray s over local s, chunk / embed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sc in ray["scales"]:
        for r in [{"workers": "local", **sc["local"]}, *sc["ray"]]:
            up, over = r.get("speedup_over_fewest"), r.get("overhead_against_local")
            speedup = " / ".join(_num(up[s], ".2f") for s in ("chunking", "embedding")) if up else ""
            against = (" / ".join(_num(over[s]["ratio"], ".2f") for s in ("chunking", "embedding"))
                       + " (" + " / ".join(f"{over[s]['seconds']:+.2f} s" for s in ("chunking", "embedding")) + ")"
                       if over else "")
            lines.append(f"| {sc['scale']}x | {r['workers']} | {sc['documents']:,} | {sc['chunks']:,} | "
                         f"{r['chunking_seconds']:.3f} | {_num(r['documents_per_second'], ',.1f')} | "
                         f"{_num(r['chunks_per_second'], ',.0f')} | {r['embedding_seconds']:.2f} | "
                         f"{_num(r['vectors_per_second'], ',.1f')} | {speedup} | {against} |")
    return lines


@dataclass(frozen=True)
class Budget:
    """What the budget is computed from, each read from the report."""

    chunks_per_manual: float
    vectors_per_second: float  # one machine, its most workers, the largest scale
    chunks_per_second: float  # chunking on Ray, the same run
    workers: int
    scale: int

    @classmethod
    def of(cls, ray: dict[str, Any]) -> Budget:
        first, last = ray["scales"][0], ray["scales"][-1]
        fastest = max(last["ray"], key=lambda r: r["workers"])
        return cls(first["chunks"] / first["documents"], fastest["vectors_per_second"],
                   fastest["chunks_per_second"], fastest["workers"], last["scale"])

    def hours(self, machines: int) -> tuple[float, float]:
        """(embedding, chunking) hours for one chunker over MANUALS manuals on `machines` such machines."""
        chunks = MANUALS * self.chunks_per_manual
        return (chunks / (machines * self.vectors_per_second) / 3600,
                chunks / (machines * self.chunks_per_second) / 3600)


def budget_table(ray: dict[str, Any]) -> list[str]:
    b = Budget.of(ray)
    lines = [f"Read from the report: {b.chunks_per_manual:.1f} chunks per manual (1x), so "
             f"{MANUALS * b.chunks_per_manual / 1e6:.2f} million chunks per chunker; {b.vectors_per_second:.1f} "
             f"vectors/s and {b.chunks_per_second:,.0f} chunks/s per machine ({b.scale}x, {b.workers} Ray workers).",
             "",
             f"| machines like this one ({b.workers} Ray workers each) | embedding, hours per chunker | "
             "chunking, hours (Ray's rate) |",
             "|---|---|---|"]
    for n in MACHINES:
        embed, chunk = b.hours(n)
        lines.append(f"| {n} | {embed:.2f} | {chunk:.3f} |")
    return lines


def render(report: dict[str, Any]) -> dict[str, str]:
    """The Markdown blocks SCALE.md carries for `report`: "stages" (its input line and the stages table) and
    "budget" (what the budget reads from it, and the budget)."""
    inp, ray = report["input"], report["ray"]
    head = (f"{inp['documents']} of {Path(inp['data']).name}'s {inp['documents_in_set']} documents "
            f"({inp['mb']:.3f} MB) at {', '.join(f'{s}x' for s in inp['scales'])}; chunker `{inp['chunker']}`, "
            f"embedder `{inp['embedder_spec']}`, Ray with {ray['cpus']} CPUs, batches of {ray['embed_batch']} texts.")
    return {"stages": "\n".join([head, "", *stages_table(ray)]) + "\n",
            "budget": "\n".join(budget_table(ray)) + "\n"}


def markers(block: str) -> tuple[str, str]:
    return f"<!-- bench.scale_doc: {block} -->", f"<!-- bench.scale_doc: end of {block} -->"


def _between(document: str, block: str) -> tuple[int, int]:
    """Where `block`'s content starts and ends in `document`: after its first marker, before its second
    (ValueError when they are missing)."""
    begin, end = markers(block)
    return document.index(begin) + len(begin), document.index(end)


def rendered_block(document: str, block: str) -> str:
    """What sits between `block`'s markers in `document`."""
    start, stop = _between(document, block)
    return document[start:stop].strip("\n") + "\n"


def write_into(path: Path, blocks: dict[str, str]) -> None:
    """Each block of `blocks` put between its markers in the document at `path`; the rest left as it is."""
    document = path.read_text(encoding="utf-8")
    for block, text in blocks.items():
        start, stop = _between(document, block)
        document = document[:start] + "\n" + text + document[stop:]
    path.write_text(document, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> dict[str, str]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_doc", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a `bench.scale --executor ray --json` report")
    parser.add_argument("--write", type=Path, metavar="DOC", help="replace the blocks between DOC's markers")
    args = parser.parse_args(argv)
    blocks = render(json.loads(args.report.read_text(encoding="utf-8")))
    if args.write:
        write_into(args.write, blocks)
    else:
        print("\n".join(blocks[b] for b in BLOCKS), end="")
    return blocks


if __name__ == "__main__":
    main()
