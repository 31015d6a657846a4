"""`run_chunkers`: the next spec is chunked on a worker thread while this one is embedded and indexed; chunking
stays one spec at a time and in order, results and errors stay per spec, progress comes from the caller's thread."""

from __future__ import annotations

import threading
import time
from itertools import groupby

import numpy as np
import pytest

from core.chunkers.registry import make_chunker
from core.infra.workspace import Workspace
from core.pipeline import chunk_documents
from core.schema.documents import Document
from core.services import Services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.workbench import Corpus, run_chunkers

TEXT = " ".join([
    "Clean the air filter of the Nordwind 225B every two weeks.",
    "Rinse it in lukewarm water and let it dry in the shade before you put it back.",
    "Error E4 means the indoor temperature sensor failed; switch the unit off and call service.",
    "The remote control uses two AAA batteries, which last about a year.",
] * 6)
DOC = Document("ac", "Nordwind 225B", TEXT)
SPECS = ["paragraph", "recursive:theta=20", "no-such-chunker", "sentence:max_tokens=30"]


class SlowEmbedder:
    """The real MiniLM, each call held for `delay` seconds and recorded as (thread, start, end)."""

    def __init__(self, inner, delay: float) -> None:
        self.inner, self.delay, self.key = inner, delay, inner.key
        self.calls: list[tuple[str, float, float]] = []

    def describe(self) -> str:
        return self.inner.describe()

    def embed(self, texts, progress=None) -> np.ndarray:
        start = time.perf_counter()
        time.sleep(self.delay)
        vectors = self.inner.embed(texts, progress)
        self.calls.append((threading.current_thread().name, start, time.perf_counter()))
        return vectors


def services_with(tmp_path, embedder) -> Services:
    ws = Workspace.open(tmp_path / "ws")
    return Services(Settings(workspace=str(ws.root)), ws, embedder, VectorStore(StoreSettings(path=ws.chroma)))


def test_the_next_spec_is_chunked_while_this_one_is_indexed(tmp_path, minilm, monkeypatch):
    import core.workbench.runs as runs

    chunked: list[tuple[str, str, float, float]] = []

    def recording_chunk_documents(docs, chunker, cache_dir=None, progress=None):
        start = time.perf_counter()
        run = chunk_documents(docs, chunker, cache_dir, progress)
        chunked.append((chunker.spec, threading.current_thread().name, start, time.perf_counter()))
        return run

    monkeypatch.setattr(runs, "chunk_documents", recording_chunk_documents)
    embedder = SlowEmbedder(minilm, delay=0.5)
    services = services_with(tmp_path, embedder)
    seen: list[tuple[str, str]] = []
    results = run_chunkers(services, Corpus([DOC]), SPECS,
                           progress=lambda spec, i, n: seen.append((spec, threading.current_thread().name)))

    assert list(results) == SPECS  # in order, the failing spec included
    assert results["no-such-chunker"].error and not results["no-such-chunker"].ok
    assert all(results[s].ok for s in SPECS if s != "no-such-chunker")
    for spec in ("paragraph", "recursive:theta=20", "sentence:max_tokens=30"):  # the same chunks as one by one
        alone = chunk_documents([DOC], make_chunker(spec, services.context()))
        assert [(c.start, c.end) for c in results[spec].run.chunks] == [(c.start, c.end) for c in alone.chunks]
        assert results[spec].seconds >= 0.5  # its own chunking and indexing, the held embedding included

    assert [s.split(":")[0] for s, *_ in chunked] == ["paragraph", "recursive", "sentence"]  # in order
    assert {thread for _, thread, *_ in chunked} == {"chunk-ahead_0"}  # one worker: one spec at a time
    for (_, _, _, end), (_, _, start, _) in zip(chunked, chunked[1:]):
        assert end <= start  # never two specs chunking at once
    main = threading.current_thread().name
    assert {thread for thread, *_ in embedder.calls} == {main}  # indexing stays in the calling thread
    first_index_end = embedder.calls[0][2]
    assert chunked[1][2] < first_index_end  # recursive was chunked while paragraph was being embedded
    assert {thread for _, thread in seen} == {main}  # progress only from the caller's thread (Streamlit needs it)
    assert [s for s, _ in groupby(s for s, _ in seen)] == [*SPECS, "done"]  # repeated while a spec runs


def test_cached_only_leaves_out_what_the_workspace_does_not_hold(tmp_path, minilm):
    services = services_with(tmp_path, minilm)
    corpus = Corpus([DOC])
    run_chunkers(services, corpus, ["paragraph"])
    restored = run_chunkers(services, corpus, ["recursive:theta=20", "paragraph", "no-such-chunker"],
                            cached_only=True)
    assert set(restored) == {"paragraph", "no-such-chunker"}  # recursive was never run: left out, not chunked
    assert restored["paragraph"].ok and restored["paragraph"].indexed.reused
    assert restored["no-such-chunker"].error


class StopPressed(Exception):
    """What Streamlit raises in the page's thread on Stop or a rerun."""


def test_chunking_on_the_worker_thread_stops_when_the_run_is_stopped(tmp_path):
    """Issue 39, item 7: chunking started on the worker thread went on after Stop, to the end of the spec, and
    cached it. Now it ends at its next document and caches nothing."""
    from core.workbench import make_corpus

    services = services_with(tmp_path, None)
    corpus = make_corpus([Document(f"d{i}", f"Manual {i}", TEXT) for i in range(400)], None, False)

    def stop(name, done, total):
        raise StopPressed

    started = time.perf_counter()
    with pytest.raises(StopPressed):
        run_chunkers(services, corpus, ["sentence:max_tokens=30"], stop)
    for worker in [t for t in threading.enumerate() if t.name.startswith("chunk-ahead")]:
        worker.join(timeout=60)
    stopped_after = time.perf_counter() - started
    assert list(services.workspace.chunk_runs.glob("*.json")) == []  # the spec was not finished and cached
    whole = time.perf_counter()
    chunk_documents(corpus.documents, make_chunker("sentence:max_tokens=30"), services.workspace.chunk_runs)
    assert stopped_after < (time.perf_counter() - whole) / 2
