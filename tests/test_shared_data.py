"""Tests that need ../shared/data: skipped with a reason when it is missing, a failure when CI is "true"."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

import tests.conftest as shared
from tests.conftest import ROOT


@pytest.fixture()
def no_shared_data(monkeypatch, tmp_path):
    monkeypatch.setattr(shared, "SHARED_DATA", tmp_path / "missing" / "data")
    return shared.SHARED_DATA


@pytest.mark.parametrize("ci", [None, "false", "1", ""])
def test_a_missing_data_set_is_skipped_off_ci_with_what_is_missing(monkeypatch, no_shared_data, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared.shared_dataset("covid_qa")
    reason = str(skipped.value)
    assert "shared data set 'covid_qa' is missing" in reason
    assert str(no_shared_data / "covid_qa" / "corpus.jsonl") in reason


@pytest.mark.parametrize("ci", ["true", "TRUE", "True"])
def test_a_missing_data_set_fails_on_ci(monkeypatch, no_shared_data, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception) as failed:
        shared.shared_dataset("covid_qa")
    message = str(failed.value)
    assert message.startswith("CI=true and shared data set 'covid_qa' is missing")
    assert str(no_shared_data) in message


def test_a_present_data_set_is_returned(monkeypatch, tmp_path):
    (tmp_path / "data" / "tiny").mkdir(parents=True)
    (tmp_path / "data" / "tiny" / "corpus.jsonl").write_text("{}\n")
    monkeypatch.setattr(shared, "SHARED_DATA", tmp_path / "data")
    monkeypatch.setenv("CI", "true")
    assert shared.shared_dataset("tiny") == tmp_path / "data" / "tiny"


def _item(marked: bool):
    marker = pytest.mark.data.mark if marked else None
    return SimpleNamespace(get_closest_marker=lambda name: marker if name == "data" else None)


def test_the_data_marker_skips_or_fails_without_the_folder(monkeypatch, no_shared_data):
    monkeypatch.delenv("CI", raising=False)
    shared.pytest_runtest_setup(_item(marked=False))  # unmarked tests are left alone
    with pytest.raises(pytest.skip.Exception, match="shared data folder .* is missing"):
        shared.pytest_runtest_setup(_item(marked=True))
    monkeypatch.setenv("CI", "true")
    shared.pytest_runtest_setup(_item(marked=False))
    with pytest.raises(pytest.fail.Exception, match="CI=true and the shared data folder"):
        shared.pytest_runtest_setup(_item(marked=True))
    no_shared_data.mkdir(parents=True)
    shared.pytest_runtest_setup(_item(marked=True))  # present: runs, on CI too


SESSION_CONFTEST = """
import os
from pathlib import Path

import tests.conftest as shared
from tests.conftest import pytest_runtest_setup  # noqa: F401  (the hook under test)

shared.SHARED_DATA = Path(os.environ["SHARED_DATA_UNDER_TEST"])
"""
SESSION_TESTS = """
import pytest

from tests.conftest import shared_dataset


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
