"""The machine file's header is JSON read back from disk: `header_problem` takes each field only in the form
`make_header` writes it (a whole number of dimensions, canaries as text with a vector), and names the field that
is not."""

from __future__ import annotations

import numpy as np
import pytest

from core.store.machine_file import header_problem, make_header


class _Embedder:
    key, dim = "fake:2", 2

    def embed(self, texts, progress=None):
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


@pytest.fixture()
def header():
    return make_header(_Embedder(), [])


def test_the_header_it_writes_is_sound(header):
    assert header_problem(header, _Embedder(), []) is None
    assert list(header) == ["format", "embedder", "dim", "model_digest", "canaries"]


class _Unsized(_Embedder):
    dim = None  # a remote embedder knows its length only from the vectors it returns


def test_a_dimension_that_is_no_whole_number_is_named(header):
    for embedder in (_Embedder(), _Unsized()):
        assert "its vectors have True numbers" in header_problem({**header, "dim": True}, embedder, [])
        assert "its vectors have 2.0 numbers" in header_problem({**header, "dim": 2.0}, embedder, [])


@pytest.mark.parametrize("canaries", [
    "none", [], [{"text": 5, "vector": [1.0, 1.0]}], [{"text": "a"}], [{"text": "a", "vector": "1,1"}],
    ["a canary"], [{"text": "a", "vector": [1.0, 1.0, 1.0]}]])
def test_canaries_not_in_the_written_form_are_damaged(header, canaries):
    assert header_problem({**header, "canaries": canaries}, _Embedder(), []) == "its canary vectors are damaged"
