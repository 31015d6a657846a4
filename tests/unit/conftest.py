"""Fixtures shared by the unit tests of one area and no other."""

from __future__ import annotations

import pytest

import core.store.embedders as embedders


@pytest.fixture()
def machine_file(tmp_path, monkeypatch):
    """Point the machine's vector file at tmp_path, as if CHUNKLENS_MODEL_CACHE named it (test_machine_vectors.py,
    test_vector_checks.py)."""
    path = tmp_path / "machine" / "sample-vectors.sqlite"
    monkeypatch.setattr(embedders, "machine_vectors_path", lambda key: path)
    monkeypatch.delenv(embedders.MACHINE_VECTORS_ENV, raising=False)
    return path
