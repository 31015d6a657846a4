"""Where the project and the shared data sets are: `ROOT` (the checkout), `SHARED_DATA` (../shared/data beside it),
and `shared_dataset`, which reaches one set or skips the test (a failure on CI, where CI is "true").

A missing data set skips the test with a reason naming what is missing; on CI a missing data set fails it instead,
so a CI run cannot pass by skipping what it was meant to check. The root conftest's `data` marker hook uses the same
rule."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def missing_shared_data(what: str) -> NoReturn:
    """Skip the current test because `what` is missing, or fail it on CI."""
    if on_ci():
        pytest.fail(f"CI=true and {what}; CI must provide the shared data sets (a local run would skip this test)",
                    pytrace=False)
    pytest.skip(f"{what} (put the shared data sets at {SHARED_DATA} to run this test)")


def shared_dataset(name: str) -> Path:
    """The folder of shared data set `name`: skipped when missing, a failure on CI."""
    path = SHARED_DATA / name
    if not (path / "corpus.jsonl").exists():
        missing_shared_data(f"shared data set '{name}' is missing ({path / 'corpus.jsonl'} does not exist)")
    return path
