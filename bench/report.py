"""How long the downloadable HTML report takes to make (core/outputs/report_html.py), for the guided demo's report.

    python -m bench.report [--report docs/results/demo_reranked.json] [--repeat 5] [--cli] [--json OUT]

Times, in this process: importing the report module with Plotly and pandas (paid once per process: the app has
them loaded already), the first render, and `--repeat` more renders (median and max; the target is under 2 s,
what a click on "Download report" waits for). `--cli` also times `python -m core report` end to end in a new
process (imports included). Prints the figures and the file's size; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import write_json

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "docs" / "results" / "demo_reranked.json"
TARGET_SECONDS = 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n")[0])
    parser.add_argument("--report", type=Path, default=DEMO, help="a bench report (default: the demo's)")
    parser.add_argument("--repeat", type=int, default=5, help="renders after the first (default 5)")
    parser.add_argument("--cli", action="store_true", help="also time `python -m core report` in a new process")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures here")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    import plotly.express  # noqa: F401  (what the figures import; timed apart from the rendering)

    from core.evaluation.report import load_reports
    from core.outputs.report_html import render_html
    imports = time.perf_counter() - t0

    t0 = time.perf_counter()
    reports = load_reports(args.report)
    load = time.perf_counter() - t0
    payload = reports if len(reports) > 1 else reports[0]
    t0 = time.perf_counter()
    text = render_html(payload)
    first = time.perf_counter() - t0
    runs = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        again = render_html(payload)
        runs.append(time.perf_counter() - t0)
        assert again == text  # the same input, the same file
    median = statistics.median(runs) if runs else first
    result = {"report": str(args.report), "chunkers": sum(len(r.results) for r in reports),
              "bytes": len(text.encode("utf-8")), "import_s": imports, "load_s": load, "first_render_s": first,
              "render_median_s": median, "render_max_s": max(runs) if runs else first, "repeat": args.repeat,
              "target_s": TARGET_SECONDS, "met": median < TARGET_SECONDS}
    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "core", "report", str(args.report), "--out",
                                   str(Path(tmp) / "report.html")], cwd=ROOT, capture_output=True, text=True)
            result["cli_s"] = time.perf_counter() - t0
            result["cli_status"] = proc.returncode
    print(f"{args.report}: {result['chunkers']} chunkers, {result['bytes'] / 1e6:.2f} MB of HTML")
    print(f"import (plotly, pandas, core)  {imports:6.2f} s  once per process")
    print(f"load the JSON                  {load:6.3f} s")
    print(f"first render                   {first:6.2f} s")
    print(f"render, median of {args.repeat:<2d}          {median:6.2f} s  (max {result['render_max_s']:.2f} s; "
          f"target < {TARGET_SECONDS:g} s: {'met' if result['met'] else 'NOT met'})")
    if args.cli:
        print(f"python -m core report, new process {result['cli_s']:5.2f} s  (exit {result['cli_status']})")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
