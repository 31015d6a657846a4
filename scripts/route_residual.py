"""Title routing's lexical side: the question without the words that named the title, or the whole question.

Usage: .venv/bin/python scripts/route_residual.py [--modes hybrid,bm25] [--shared ../shared/data]
                                                  [--chunkers naive-500t:retrieval=route,chop:retrieval=route]
                                                  [--out docs/results/route_residual.json]

Once routing keeps one document's chunks, the words of its title in the question ("Samsung Galaxy S10: ...") can
only favour the chunks that repeat the name; CHOP's filter drops its model's words for that reason
(`CnmPolicy.residual_query`). This measures the same choice for routing (`TitleRoute.residual`), on the sets whose
questions name their product (asked as `--qualify-queries` asks them: emanual_galaxy, eurorack_modules, the sample
set), through the bench's own evaluation. Dense search never reads the residual, so only the lexical modes are
measured. The JSON keeps every figure; docs/RETRIEVAL.md renders it (`python -m bench.retrieval --render
docs/results`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETS = {"emanual_galaxy": "emanual_galaxy", "eurorack_modules": "eurorack_modules", "sample": "sample_data/qa"}
METRICS = ("hit@1", "hit@10", "mrr@10", "wrong_doc@10")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/route_residual.py", description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="hybrid,bm25", help="retrieval modes, comma-separated")
    parser.add_argument("--chunkers", default="naive-500t:retrieval=route,chop:retrieval=route")
    parser.add_argument("--embedder", default="bundled:all-MiniLM-L6-v2")
    parser.add_argument("--llm", default="extract", help="CHOP's CNM backend (its chunks; routing reads no tag)")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "route_residual.json")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from core.cli.flags import quiet_libraries
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.ingest.datasets import load_dataset
    from core.services import build_services, needs_of
    from core.settings import Settings
    from core.store.retrieval import RetrievalSettings
    from core.store.routing import TitleRoute

    quiet_libraries()
    specs = [s for s in args.chunkers.split(",") if s]
    services = build_services(Settings(embedder=args.embedder, cnm_backend=args.llm), needs=needs_of(specs))
    results: dict[str, Any] = {}
    default = TitleRoute.residual
    try:
        for mode in [m for m in args.modes.split(",") if m]:
            for name, folder in SETS.items():
                path = ROOT / folder if folder.startswith("sample_data") else args.shared / folder
                dataset = load_dataset(path)
                for residual in (True, False):
                    TitleRoute.residual = residual
                    options = BenchOptions([1, 3, 10], True, False, RetrievalSettings(mode))
                    report = bench_dataset(dataset, specs, options, services).to_json()
                    for spec, r in report["results"].items():
                        row = {m: r[m] for m in METRICS} | {"retrieval_applied": r["retrieval_applied"]}
                        side = "residual" if residual else "whole question"
                        results.setdefault(mode, {}).setdefault(name, {}).setdefault(spec, {})[side] = row
                        print(f"{mode} {name} {spec} {side}: " + " ".join(f"{m} {row[m]:.3f}" for m in METRICS),
                              file=sys.stderr, flush=True)
    finally:
        TitleRoute.residual = default
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = ".venv/bin/python scripts/route_residual.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.write_text(json.dumps({"command": command.strip(), "embedder": args.embedder, "llm": args.llm,
                                    "results": results}, indent=1), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
