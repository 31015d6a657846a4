"""Should a cheaper embedder be the default? Pairs the bench reports of every set run under two embedders and
writes the study RESULTS.md and the app's sidebar quote.

    python -m bench.embedder_choice --old bundled:minilm-fp32 --new bundled:minilm-int8 \
        --pair eurorack docs/results/embedder_eurorack_fp32.json docs/results/embedder_eurorack_int8.json \
        [--pair NAME OLD NEW ...] --out docs/results/embedder_choice.json

Each pair of reports comes from the same `python -m core bench` command with only `--embedder` changed (the
commands are in RESULTS.md's section). Prints the table and the decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from core.evaluation.embedder_choice import embedder_study, paired_set, study_table
from core.infra.errors import ChunkLensError
from core.infra.jsonio import loads_checked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the embedder the old reports used (today's default)")
    parser.add_argument("--new", required=True, help="the cheaper embedder the new reports used")
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("NAME", "OLD", "NEW"),
                        help="a set's name and its two reports (old embedder, new embedder)")
    parser.add_argument("--out", type=Path, help="write the study JSON here")
    args = parser.parse_args(argv)
    try:
        sets = [paired_set(name, loads_checked(Path(old).read_bytes()), loads_checked(Path(new).read_bytes()))
                for name, old, new in args.pair]
    except (OSError, ValueError, ChunkLensError) as exc:
        print(f"embedder_choice: {exc}", file=sys.stderr)
        return 2
    study = embedder_study(args.old, args.new, sets)
    study["reports"] = [{"set": name, "old": Path(old).name, "new": Path(new).name} for name, old, new in args.pair]
    if args.out:
        args.out.write_text(json.dumps(study, indent=1) + "\n", encoding="utf-8")
    print(study_table(study))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
