"""Several sessions (threads of one process) and several processes writing one workspace at once: no writer
fails, nothing one of them wrote is lost, and every file reads back whole afterwards. Real threads, real spawned
processes and real files; each round starts all writers together behind a barrier, so they meet on the same file.

Module-level functions are the workers: a spawned process imports this module to find them, so the heavy imports
are inside them."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WRITERS = 3
ROUNDS = 12
TEXT = " ".join([
    "Clean the air filter of the Nordwind 225B every two weeks.",
    "Rinse it in lukewarm water and let it dry in the shade before you put it back.",
    "Error E4 means the indoor temperature sensor failed; switch the unit off and call service.",
] * 4)


def _guarded(work: Callable[..., None], barrier: Any, results: Any, *args: Any) -> None:
    """Run `work(barrier, *args)` and report what it raised (None when nothing) through `results`."""
    try:
        work(barrier, *args)
        results.put(None)
    except BaseException as exc:  # noqa: BLE001 - whatever a writer raises is the test's finding
        results.put(f"{type(exc).__name__}: {exc}")


def _together(work: Callable[..., None], args: list[tuple], processes: bool) -> list[str]:
    """Run one `work` per entry of `args` at once, in threads or in spawned processes; what they raised."""
    if processes:
        ctx = multiprocessing.get_context("spawn")
        barrier, results = ctx.Barrier(len(args), timeout=120), ctx.Queue()
        runners = [ctx.Process(target=_guarded, args=(work, barrier, results, *a)) for a in args]
    else:
        import queue

        barrier, results = threading.Barrier(len(args), timeout=120), queue.Queue()
        runners = [threading.Thread(target=_guarded, args=(work, barrier, results, *a)) for a in args]
    for r in runners:
        r.start()
    outcomes = [results.get(timeout=300) for _ in runners]
    for r in runners:
        r.join(timeout=60)
    return [o for o in outcomes if o is not None]


def _leftovers(folder: Path) -> list[str]:
    """Temporary and set-aside files anywhere under `folder`: a finished writer leaves none."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.name.endswith(".tmp") or ".tmp." in p.name or ".damaged-" in p.name)


def _round_doc(i: int):
    from core.schema.documents import Document

    return Document("ac", "Nordwind 225B", f"{TEXT} Round {i}.")


def _chunk_runs(barrier: Any, cache_dir: str) -> None:
    from core.chunkers.registry import make_chunker
    from core.pipeline import chunk_documents

    chunker = make_chunker("paragraph")
    for i in range(ROUNDS):
        barrier.wait()
        run = chunk_documents([_round_doc(i)], chunker, Path(cache_dir))
        assert run.chunks and run.chunks[-1].text.endswith(f"Round {i}.")


def _settings_saves(barrier: Any, root: str, writer: int) -> None:
    from core.settings import Settings, load_settings_checked, save_settings

    for i in range(ROUNDS):
        barrier.wait()
        save_settings(Settings(top_k=1 + writer * ROUNDS + i), Path(root))
        loaded = load_settings_checked(Path(root))
        assert loaded.problem is None, loaded.problem


def _bm25_builds(barrier: Any, root: str) -> None:
    from core.schema.chunks import Chunk
    from core.store.lexical import LexicalStore

    for i in range(ROUNDS):
        units = [Chunk("d", n, n + 1, f"filter {n} round {i} battery {n % 3}", 4, index=n) for n in range(40)]
        barrier.wait()
        index, _ = LexicalStore(Path(root)).get(f"bm25-round-{i}", units)  # a store per session, as in the app
        assert index.ids == [c.chunk_id for c in units]


UPLOADS = 30


def _upload(writer: int, i: int) -> tuple[str, bytes]:
    """Upload `i` of `writer`: every other one has a name all writers use, and every upload its own bytes."""
    name = "same name.txt" if i % 2 == 0 else f"writer {writer} file {i}.txt"
    return name, f"Writer {writer}, upload {i}: clean the filter every two weeks.".encode()


def _uploads(barrier: Any, uploads_root: str, lib_id: str, writer: int) -> None:
    from core.ingest.library import Library

    lib = Library(Path(uploads_root), lib_id)  # a Library per session, as in the app
    for i in range(UPLOADS):
        barrier.wait()
        result = lib.add([_upload(writer, i)])
        assert result.errors == [] and len(result.added) == 1


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_uploads_to_one_library_at_once_are_all_kept(tmp_path, processes):
    from core.ingest.library import Library, new_library_id

    lib_id, writers = new_library_id(), 2
    args = [(str(tmp_path / "uploads"), lib_id, w) for w in range(writers)]
    assert _together(_uploads, args, processes) == []
    lib = Library(tmp_path / "uploads", lib_id)
    docs = lib.documents()
    uploaded = sorted(_upload(w, i)[1] for w in range(writers) for i in range(UPLOADS))
    assert len(docs) == len({d.doc_id for d in docs}) == writers * UPLOADS and lib.problems == []
    # each upload is kept once, as its own original beside its own text: none overwrote another
    assert sorted(d.text.encode() for d in docs) == uploaded
    assert all((lib.originals / f"{d.doc_id}.txt").read_bytes() == d.text.encode() for d in docs)
    assert sorted(p.read_bytes() for p in lib.originals.iterdir()) == uploaded
    assert _leftovers(lib.root) == []


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_the_same_chunk_run_cached_at_once(tmp_path, processes):
    from core.chunkers.registry import make_chunker
    from core.pipeline import load_chunk_run

    cache = tmp_path / "chunk_runs"
    cache.mkdir()
    assert _together(_chunk_runs, [(str(cache),)] * WRITERS, processes) == []
    chunker = make_chunker("paragraph")
    assert all(load_chunk_run([_round_doc(i)], chunker, cache) is not None for i in range(ROUNDS))
    assert len(list(cache.iterdir())) == ROUNDS and _leftovers(cache) == []


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_settings_saved_at_once(tmp_path, processes):
    from core.settings import load_settings_checked

    args = [(str(tmp_path), w) for w in range(WRITERS)]
    assert _together(_settings_saves, args, processes) == []
    loaded = load_settings_checked(tmp_path)
    assert loaded.problem is None and loaded.settings.top_k in {(w + 1) * ROUNDS for w in range(WRITERS)}
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_the_same_bm25_index_built_at_once(tmp_path, processes):
    from core.store.lexical import LexicalIndex

    root = tmp_path / "lexical"
    assert _together(_bm25_builds, [(str(root),)] * WRITERS, processes) == []
    assert sorted(p.name for p in root.iterdir()) == sorted(f"bm25-round-{i}" for i in range(ROUNDS))
    for i in range(ROUNDS):
        index = LexicalIndex.load(root / f"bm25-round-{i}")
        assert len(index.ids) == 40 and index.search(f"round {i} filter", 3)
    assert _leftovers(root) == []
