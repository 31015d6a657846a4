"""A whole pytest session, run as a child process with the project's conftest, on a machine without ../shared/data:
the tests that need it are skipped locally and fail when CI is "true" (the helpers themselves:
tests/unit/test_shared_data.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.data import ROOT

SESSION_CONFTEST = """
import os
from pathlib import Path

import tests.support.data as shared
from tests.conftest import pytest_runtest_setup  # noqa: F401  (the hook under test)

shared.SHARED_DATA = Path(os.environ["SHARED_DATA_UNDER_TEST"])
"""
SESSION_TESTS = """
import pytest

from tests.support.data import shared_dataset


@pytest.mark.data
def test_marked():
    pass


def test_through_the_helper():
    shared_dataset("covid_qa")
"""


@pytest.mark.parametrize("ci", [False, True])
def test_a_whole_session_without_the_data(tmp_path, ci):
    """A real pytest run with the project's conftest: two skips locally, two failures (exit 1) on CI."""
    (tmp_path / "conftest.py").write_text(SESSION_CONFTEST)
    (tmp_path / "test_needs_data.py").write_text(SESSION_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    data: needs ../shared/data\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {
        "PYTHONPATH": str(ROOT), "SHARED_DATA_UNDER_TEST": str(tmp_path / "no" / "data")}
    if ci:
        env["CI"] = "true"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEs", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    if ci:
        assert proc.returncode == 1, out
        assert "1 failed, 1 error in" in out.rstrip().splitlines()[-1], out
        assert "ERROR test_needs_data.py::test_marked - Failed: CI=true and the shared data folder" in out, out
        assert ("FAILED test_needs_data.py::test_through_the_helper - Failed: CI=true and shared data set 'covid_qa' "
                "is missing") in out, out
    else:
        assert proc.returncode == 0, out
        assert "2 skipped in" in out.rstrip().splitlines()[-1], out
        assert "the shared data folder" in out and "shared data set 'covid_qa' is missing" in out, out
