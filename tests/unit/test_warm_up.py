"""Serve first: `python -m core warm` runs beside the server (scripts/run-app.sh), so the machine's sample vectors
may be under way when a workspace is made or the guided demo is asked for. One warm-up at a time computes them
(`core.store.warm_up`); the demo waits for it rather than compute the same vectors beside it; a workspace copies
from the file as soon as it is published; nothing else ever waits."""

from __future__ import annotations

import threading
import time

import pytest

import core.store.embedders as embedders
import core.workbench as workbench
import core.workbench.demo as demo
from core.__main__ import main
from core.schema.documents import Document
from core.store.embeddings import CachedEmbedder, EmbeddingCache
from core.store.warm_up import WarmUpLock, read_progress, running

#: how long a test waits for another thread before it fails rather than hangs
PATIENCE = 120


def _publish_small_file(tmp_path, model) -> None:
    """A machine file of two texts, published as `warm` publishes (what the other warm-up of a test made)."""
    CachedEmbedder(model, EmbeddingCache(tmp_path / "made.sqlite")).embed(["alpha", "beta"])
    embedders.publish_machine_vectors(tmp_path / "made.sqlite", model)


def test_a_workspace_made_before_the_file_copies_from_it_once_it_is_published(tmp_path, machine_file):
    model = embedders.local_embedder(embedders.BUNDLED_MINILM_FP32)
    visitor = embedders.make_embedder(cache_dir=tmp_path / "visitor")
    visitor.embed(["gamma"])  # no file yet: computed, as always
    assert visitor.stats.computed == 1
    _publish_small_file(tmp_path, model)
    visitor.embed(["alpha", "beta", "gamma"])
    assert (visitor.stats.computed, visitor.stats.copied) == (1, 2)
    assert embedders.machine_file_pending(visitor) is None
    alone = embedders.make_embedder(cache_dir=tmp_path / "alone")
    machine_file.unlink()
    assert embedders.machine_file_pending(alone) == machine_file  # what the guided demo would wait for


def test_a_second_warm_up_waits_for_the_first_and_computes_nothing(tmp_path, machine_file, monkeypatch, capsys):
    """The first warm-up holds the lock and says how far it is, then publishes; a second `warm` started meanwhile
    waits, names the first one's step, and finds the file made. It never reaches the computing step."""
    model = embedders.local_embedder(embedders.BUNDLED_MINILM_FP32)
    computing: list[object] = []
    monkeypatch.setattr(workbench, "embed_sample_set", lambda *a, **k: computing.append(a))
    first = WarmUpLock(machine_file).acquire()
    first.report("recursive on the manuals joined", 1, 16)
    assert running(machine_file) and read_progress(machine_file).done == 1
    second: dict[str, int] = {}
    thread = threading.Thread(target=lambda: second.update(rc=main(["warm"])))
    thread.start()
    err, deadline = "", time.monotonic() + PATIENCE
    while "waiting for it" not in err and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
        err += capsys.readouterr().err
    assert "(recursive on the manuals joined, step 2 of 16); waiting for it" in err, err
    _publish_small_file(tmp_path, model)
    stamp = machine_file.stat().st_ino
    first.release()
    thread.join(PATIENCE)
    err += capsys.readouterr().err
    assert second == {"rc": 0} and not computing, err
    assert "the other warm-up made them" in err and machine_file.stat().st_ino == stamp
    assert not running(machine_file) and read_progress(machine_file) is None


def test_nothing_waits_without_a_warm_up_running(tmp_path, machine_file):
    services = _services(tmp_path / "visitor")
    started = time.monotonic()
    assert demo.wait_for_warm_up(services, lambda *_: pytest.fail("nothing to wait for")) is False
    assert time.monotonic() - started < 1


def _services(workspace):
    from core.services import build_services
    from core.settings import Settings

    return build_services(Settings(workspace=str(workspace)))


@pytest.mark.slow
def test_the_guided_demo_waits_for_a_running_warm_up_and_then_computes_nothing(tmp_path, machine_file, monkeypatch,
                                                                              sample_vectors):
    """A warm-up holds the lock and the file is not there: a visitor's own document still runs at once, while the
    guided demo says it waits for the sample vectors (through its progress callback) and, once the warm-up
    publishes them, runs from them without computing a vector, handing each chunker on as it is done."""
    from core.workbench.corpus import make_corpus
    from core.workbench.runs import run_chunkers

    monkeypatch.setattr(demo, "DEFAULT_SPECS", ["paragraph"])
    model = embedders.local_embedder(embedders.BUNDLED_MINILM_FP32)
    services = _services(tmp_path / "visitor")
    warm_up = WarmUpLock(machine_file).acquire()
    warm_up.report("cosine on each manual alone", 12, 16)
    asked = threading.Event()

    def finish_warm_up() -> None:  # publishes once the demo says it waits (or fails the test by never saying so)
        asked.wait(PATIENCE)
        embedders.publish_machine_vectors(sample_vectors, model)
        warm_up.release()

    own = Document("own", "My manual", "The filter sits behind the front panel.\n\nRinse it every two weeks.")
    assert run_chunkers(services, make_corpus([own], None, join=False), ["paragraph"])["paragraph"].ok
    assert running(machine_file), "the visitor's own run waited for the warm-up"
    finisher = threading.Thread(target=finish_warm_up)
    finisher.start()
    computed_before = services.embedder.stats.computed
    labels: list[tuple[str, int, int]] = []

    def progress(label: str, done: int, total: int) -> None:
        labels.append((label, done, total))
        if label.startswith(demo.WAITING):
            asked.set()

    done: list[str] = []
    summary = workbench.guided_demo(services, services.settings.retrieval_settings(), progress,
                                    on_result=lambda spec, result: done.append(spec))
    finisher.join(PATIENCE)
    assert summary.results["paragraph"].ok, summary.results["paragraph"].error
    assert done == ["paragraph"]  # each chunker handed on as it is done
    assert (f"{demo.WAITING} (cosine on each manual alone, step 13 of 16)", 12, 16) in labels
    assert services.embedder.stats.computed == computed_before, "the demo computed vectors the warm-up made"
    assert services.embedder.stats.copied > 0
