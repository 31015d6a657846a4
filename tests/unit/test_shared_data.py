"""Tests that need ../shared/data: skipped with a reason when it is missing, a failure when CI is "true" (the
helpers of tests/support/data.py and the root conftest's `data` marker hook). A whole pytest session without the
data: tests/integration/test_shared_data_session.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import tests.conftest as conftest
import tests.support.data as shared


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
    conftest.pytest_runtest_setup(_item(marked=False))  # unmarked tests are left alone
    with pytest.raises(pytest.skip.Exception, match="shared data folder .* is missing"):
        conftest.pytest_runtest_setup(_item(marked=True))
    monkeypatch.setenv("CI", "true")
    conftest.pytest_runtest_setup(_item(marked=False))
    with pytest.raises(pytest.fail.Exception, match="CI=true and the shared data folder"):
        conftest.pytest_runtest_setup(_item(marked=True))
    no_shared_data.mkdir(parents=True)
    conftest.pytest_runtest_setup(_item(marked=True))  # present: runs, on CI too
