"""Where the test suite's time goes: seconds by kind (unit, app, integration, browser, bench), by module and by test.

The suite's tiers are its folders under tests/, so a test's kind is the folder it lives in. The figures come from
a JUnit XML report, which pytest writes with `--junitxml` (each test's time is its set-up, call and tear-down, so
a module's shared fixture counts once, on the test that first needs it). `scripts/run-tests.sh` always writes one
to artifacts/test-times.xml, so after a run of the README's second command this prints the table without running
anything again.

Usage: .venv/bin/python -m bench.suite [--junit FILE] [--top N] [--json OUT]
       .venv/bin/python -m bench.suite --run [-- PYTEST ARGS]   (runs pytest first, writing the report)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPORT = ROOT / "artifacts" / "test-times.xml"
KINDS = ("unit", "app", "integration", "browser", "bench")


@dataclass(frozen=True)
class TestTime:
    """One test case of the report: its module path (tests/app/test_app.py), name, seconds and outcome."""

    module: str
    name: str
    seconds: float
    outcome: str

    @property
    def kind(self) -> str:
        parts = Path(self.module).parts
        return parts[1] if len(parts) > 2 and parts[1] in KINDS else "other"


def read_report(path: Path) -> list[TestTime]:
    """The test cases of a JUnit XML report written by pytest."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")  # tests.app.test_app (or tests.app.test_app.TestClass)
        module = _module_path(classname)
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        cases.append(TestTime(module, case.get("name", ""), float(case.get("time", 0.0)), outcome))
    return cases


def wall_seconds(path: Path) -> float | None:
    """The run's own duration from start to end, as pytest wrote it on the test suite (with several workers, less
    than the sum of the tests' times)."""
    suite = next(ET.parse(path).getroot().iter("testsuite"), None)
    return float(suite.get("time", 0.0)) if suite is not None and suite.get("time") else None


def _module_path(classname: str) -> str:
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):  # the longest prefix that is a file: a class name may follow it
        candidate = Path(*parts[:end]).with_suffix(".py")
        if (ROOT / candidate).exists():
            return candidate.as_posix()
    return "/".join(parts) + ".py"


def summary(cases: list[TestTime], top: int = 15, wall: float | None = None) -> dict:
    """Seconds and counts by kind and by module, and the slowest tests; the same figures `main` prints. `wall`: the
    run's duration, when the report gives it."""
    total = sum(c.seconds for c in cases)
    by_kind: dict[str, list[float]] = defaultdict(list)
    by_module: dict[str, list[float]] = defaultdict(list)
    for c in cases:
        by_kind[c.kind].append(c.seconds)
        by_module[c.module].append(c.seconds)
    outcomes = Counter(c.outcome for c in cases)
    slowest = sorted(cases, key=lambda c: -c.seconds)[:top]
    return {
        "tests": len(cases),
        "seconds": round(total, 1),
        "wall_seconds": round(wall, 1) if wall is not None else None,
        "outcomes": dict(outcomes),
        "by_kind": {k: {"tests": len(v), "seconds": round(sum(v), 1)}
                    for k, v in sorted(by_kind.items(), key=lambda kv: -sum(kv[1]))},
        "by_module": {m: {"tests": len(v), "seconds": round(sum(v), 1)}
                      for m, v in sorted(by_module.items(), key=lambda kv: -sum(kv[1]))},
        "slowest": [{"test": f"{c.module}::{c.name}", "seconds": round(c.seconds, 1)} for c in slowest],
    }


def print_summary(s: dict, top: int) -> None:
    total = s["seconds"] or 1.0
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(s["outcomes"].items()))
    wall = f"; the run took {s['wall_seconds']:.0f} s = {s['wall_seconds'] / 60:.1f} min" if s["wall_seconds"] else ""
    print(f"{s['tests']} tests ({outcomes}), {s['seconds']:.0f} s = {s['seconds'] / 60:.1f} min of test time{wall}")
    print(f"\n{'kind':<12}{'tests':>7}{'seconds':>10}{'share':>8}")
    for kind, row in s["by_kind"].items():
        print(f"{kind:<12}{row['tests']:>7}{row['seconds']:>10.1f}{row['seconds'] / total:>8.0%}")
    print(f"\n{'module':<52}{'tests':>7}{'seconds':>10}{'share':>8}")
    for module, row in list(s["by_module"].items())[:top]:
        print(f"{module:<52}{row['tests']:>7}{row['seconds']:>10.1f}{row['seconds'] / total:>8.0%}")
    print(f"\nslowest {len(s['slowest'])} tests")
    for row in s["slowest"]:
        print(f"{row['seconds']:>8.1f}  {row['test']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path, default=DEFAULT_REPORT, help="the JUnit XML report to read")
    parser.add_argument("--run", action="store_true", help="run pytest first (arguments after -- go to pytest)")
    parser.add_argument("--top", type=int, default=15, help="how many modules and tests to list")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args, rest = parser.parse_known_args(argv)
    if args.run:
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        pytest_args = [a for a in rest if a != "--"]
        subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={args.junit}", *pytest_args], cwd=ROOT,
                       check=False)
    elif rest:
        parser.error(f"unknown arguments {rest} (pytest arguments need --run)")
    if not args.junit.exists():
        parser.error(f"no report at {args.junit}: run the suite (scripts/run-tests.sh) or pass --run")
    s = summary(read_report(args.junit), args.top, wall_seconds(args.junit))
    print_summary(s, args.top)
    if args.json:
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
