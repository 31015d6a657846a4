"""Command line: `python -m core bench ...`, `python -m core table REPORT.json`, `python -m core export ...`,
`python -m core questions ...` (a generated qa-spans set), `python -m core report REPORT.json` (a self-contained
HTML file), `python -m core chunkers` and `python -m core warm` (the sample set's vectors, once per machine).

Every expected failure (bad folder, bad file, unknown chunker, unreachable server) ends with one line on
stderr and exit status 2; progress goes to stderr so stdout holds only the results table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import core.catalog  # noqa: F401  (the composition root: every chunker, method and service)
from core.cli.commands import cmd_bench, cmd_chunkers, cmd_export, cmd_questions, cmd_report, cmd_table, cmd_warm
from core.cli.flags import EXIT_USAGE, build_parser
from core.infra.errors import ChunkLensError

#: each command's function (`chunkers`, which takes no flags, is the rest)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "bench": cmd_bench, "table": cmd_table, "export": cmd_export, "questions": cmd_questions, "report": cmd_report,
    "warm": cmd_warm}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        command = COMMANDS.get(args.command)
        return command(args) if command is not None else cmd_chunkers()
    except ChunkLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
