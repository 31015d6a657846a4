"""`RayExecutor.chunk` keeps at most `workers` tasks in flight (so `bench.scale --executor ray --workers 1` measures
one worker even on a cluster of more CPUs), and still yields every job once; checked on a stand-in for Ray."""

from __future__ import annotations

import types

import pytest

from core.chunkers.registry import make_chunker
from core.evaluation.prefetch import GroupJob, length_batches
from core.evaluation.ray_executor import RayExecutor


class FakeRay:
    """Ray's calls the executor makes, run at once in this process, counting the tasks submitted and not yet
    waited for."""

    exceptions = types.SimpleNamespace(RayTaskError=type("RayTaskError", (Exception,), {}))

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    def remote(self, **_: object):
        def wrap(fn):
            def submit(*args):
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
                return [fn(*args)]  # a list: each ref its own object, hashable by identity below

            return types.SimpleNamespace(remote=lambda *a: _Ref(submit(*a)))

        return wrap

    def put(self, value):
        return value

    def wait(self, pending, num_returns=1):
        self.in_flight -= num_returns
        return pending[:num_returns], pending[num_returns:]

    def get(self, ref):
        return ref.value[0]


class _Ref:
    def __init__(self, value) -> None:
        self.value = value


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_no_more_tasks_in_flight_than_workers_and_every_job_yielded_once(monkeypatch, workers):
    import core.evaluation.ray_executor as rx

    monkeypatch.setattr(rx, "chunk_group", lambda chunker, settings, library, indices: {"indices": indices})
    ray = FakeRay()
    jobs = [GroupJob(make_chunker("chop"), (i,)) for i in range(7)]  # CHOP learns the library: it is sent it all
    got = dict(RayExecutor(ray, workers).chunk(None, ["doc"] * 7, jobs))  # type: ignore[arg-type]
    assert ray.most == workers
    assert sorted(got) == list(range(7)) and all(got[j]["indices"] == (j,) for j in got)


def test_a_chunker_that_does_not_learn_the_library_is_sent_its_own_documents(monkeypatch):
    import core.evaluation.ray_executor as rx

    monkeypatch.setattr(rx, "chunk_group",
                        lambda chunker, settings, library, indices: {"library": list(library), "indices": indices})
    library = [f"doc{i}" for i in range(5)]
    jobs = [GroupJob(make_chunker("paragraph"), (1, 2)), GroupJob(make_chunker("paragraph"), (4,))]
    got = dict(RayExecutor(FakeRay(), 2).chunk(None, library, jobs))  # type: ignore[arg-type]
    assert got == {0: {"library": ["doc1", "doc2"], "indices": (0, 1)}, 1: {"library": ["doc4"], "indices": (0,)}}


def test_length_batches_are_shortest_first_and_keep_every_text():
    texts = ["ccc", "a", "bbbb", "dd", "e"]
    batches = length_batches(texts, 2)
    assert [len(b) for b in batches] == [2, 2, 1]
    flat = [t for b in batches for t in b]
    assert sorted(flat) == sorted(texts) and [len(t) for t in flat] == sorted(len(t) for t in texts)
