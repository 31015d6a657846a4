"""`python -m bench.suite`: the suite's time by kind and by module, read from pytest's own JUnit report."""

from __future__ import annotations

import subprocess
import sys

from bench.suite import read_report, summary, wall_seconds
from tests.support.data import ROOT

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5" time="45.5">
<testcase classname="tests.unit.test_metrics" name="test_hit" time="0.5"/>
<testcase classname="tests.unit.test_metrics" name="test_mrr" time="1.5"><skipped message="no data"/></testcase>
<testcase classname="tests.app.test_app" name="test_home_page_renders" time="12.0"/>
<testcase classname="tests.browser.test_story" name="test_the_guided_demo_reaches_its_summary" time="40.0">
<failure message="boom"/></testcase>
<testcase classname="tests.integration.test_cli.TestBench" name="test_x[a-b]" time="6.0"/>
</testsuite></testsuites>
"""


def test_the_report_is_summed_by_kind_and_module_with_the_slowest_first(tmp_path):
    path = tmp_path / "times.xml"
    path.write_text(REPORT)
    cases = read_report(path)
    assert [c.kind for c in cases] == ["unit", "unit", "app", "browser", "integration"]
    assert cases[4].module == "tests/integration/test_cli.py"  # a class name after the module is not a file
    s = summary(cases, top=2, wall=wall_seconds(path))
    assert s["tests"] == 5 and s["seconds"] == 60.0 and s["wall_seconds"] == 45.5  # two workers: less than the sum
    assert s["outcomes"] == {"passed": 3, "skipped": 1, "failure": 1}
    assert list(s["by_kind"]) == ["browser", "app", "integration", "unit"]  # the most time first
    assert s["by_kind"]["unit"] == {"tests": 2, "seconds": 2.0}
    assert s["by_module"]["tests/unit/test_metrics.py"] == {"tests": 2, "seconds": 2.0}
    assert [row["seconds"] for row in s["slowest"]] == [40.0, 12.0]


def test_the_command_prints_the_table(tmp_path):
    path = tmp_path / "times.xml"
    path.write_text(REPORT)
    command = [sys.executable, "-m", "bench.suite", "--junit", str(path), "--json", str(tmp_path / "s.json")]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.startswith("5 tests (1 failure, 3 passed, 1 skipped), 60 s = 1.0 min of test time; the run took 46 s")
    assert "browser" in out and "tests/browser/test_story.py::test_the_guided_demo_reaches_its_summary" in out
    assert (tmp_path / "s.json").exists()
