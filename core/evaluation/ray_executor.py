"""Ray as the bench's executor (`core bench --executor ray`): chunking as tasks over groups of documents, embedding
in actors that each load the embedder once; `core.evaluation.prefetch` puts what they return into the caches.

Ray is optional (requirements-test.txt pins it; the app does not need it) and imported only here, only when asked
for. Without an address a local Ray instance is started for the run (a small object store, no dashboard, the
workers' logs kept from the terminal, as many CPUs as this process may use) and stopped at its end; `auto` or
`ray://host:port` joins a running cluster, whose nodes must have this checkout and its environment installed. A
Ray already started in this process is used as it is and left running. Ray's usage statistics are switched off
before it starts: nothing is sent anywhere.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from core.evaluation.prefetch import GroupJob, GroupResult, chunk_group, task_documents
from core.infra.errors import ChunkLensError
from core.schema.documents import Document
from core.settings import Settings

#: the Ray release requirements-test.txt pins (a test holds the two together)
RAY_PIN = "2.60.0"
INSTALL = f"`bash scripts/setup.sh --test` or `.venv/bin/pip install ray=={RAY_PIN}`"
#: the local instance's shared-object store: the library and the chunk lists pass through it (Ray's floor is 75 MB)
OBJECT_STORE_BYTES = 128 * 1024 * 1024


def import_ray() -> Any:
    """The `ray` module, with its usage statistics off; one ChunkLensError line naming the install command when
    Ray is not installed."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # read when Ray starts: never report usage
    try:
        import ray
    except ImportError:
        raise ChunkLensError(f"--executor ray needs Ray, which is not installed; install it with {INSTALL}") from None
    return ray


def available_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextlib.contextmanager
def ray_executor(address: str | None = None) -> Iterator[RayExecutor]:
    """A `RayExecutor` on a local instance started for the run (address None) or on the cluster at `address`."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address:
            _check_reachable(address)
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                # "local": a new instance even where RAY_ADDRESS or a `ray start` would have Ray join another
                ray.init(address="local", num_cpus=available_cpus(), object_store_memory=OBJECT_STORE_BYTES,
                         include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds for a cluster it cannot reach or start
            where = f"join the Ray cluster at {address}" if address else "start a local Ray instance"
            said = str(exc).strip().splitlines()
            raise ChunkLensError(f"cannot {where}: {said[0] if said else type(exc).__name__}") from None
        started = True
    try:
        yield RayExecutor(ray, max(1, int(ray.cluster_resources().get("CPU", 1))))
    finally:
        if started:
            ray.shutdown()


#: seconds to wait for a cluster's address to answer at all (Ray itself waits on an address that never answers)
CONNECT_SECONDS = 5.0


def cluster_address(address: str) -> tuple[str, int] | None:
    """The (host, port) of `--ray-address` (None for `auto`); one ChunkLensError line for anything else."""
    from urllib.parse import urlsplit

    if address == "auto":
        return None
    where = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        host, port = where.hostname, where.port
    except ValueError:
        host, port = None, None
    if where.scheme != "ray" or not host or not port:
        raise ChunkLensError(f"--ray-address must be auto, HOST:PORT or ray://HOST:PORT, not '{address[:200]}'")
    return host, port


def _check_reachable(address: str) -> None:
    """One ChunkLensError line when nothing answers at a cluster's address at all."""
    import socket

    if (where := cluster_address(address)) is None:
        return
    try:
        socket.create_connection(where, timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise ChunkLensError(f"cannot join the Ray cluster at {address}: nothing answers there "
                             f"({exc.strerror or type(exc).__name__})") from None


class _EmbedActor:
    """One worker's embedder, loaded once, embedding batch after batch on the one CPU Ray gave it: the default
    MiniLM on onnxruntime with one thread (in-process it spreads over every core, so N actors would run N threads
    each), the torch one on the one thread Ray's OMP_NUM_THREADS leaves it."""

    def __init__(self, settings: Settings) -> None:
        from core.store.embedders import local_embedder
        from core.store.embeddings import BUNDLED_MINILM_FP32, BUNDLED_MINILM_INT8
        from core.store.onnx_embedder import OnnxMiniLMEmbedder, Precision

        precisions: dict[str, Precision] = {BUNDLED_MINILM_FP32: "fp32", BUNDLED_MINILM_INT8: "int8"}
        precision = precisions.get(settings.embedder)
        self.inner = (OnnxMiniLMEmbedder(long_text=settings.long_text, workers=1, precision=precision)
                      if precision else local_embedder(settings.embedder, settings.long_text))

    def embed(self, b: int, batch: Sequence[str]) -> tuple[int, np.ndarray]:
        return b, self.inner.embed(list(batch))


class RayExecutor:
    """`core.evaluation.prefetch.Executor` on Ray: `workers` tasks or actors at a time (the bench gives the cluster's
    CPU count; `bench.scale` fewer, to measure what one worker does), never more in flight."""

    name = "ray"

    def __init__(self, ray: Any, workers: int) -> None:
        self.ray = ray
        self.workers = workers

    def chunk(self, settings: Settings, library: Sequence[Document],
              jobs: Sequence[GroupJob]) -> Iterator[tuple[int, GroupResult]]:
        if not jobs:
            return
        task = self.ray.remote(num_cpus=1)(chunk_group)
        own = [task_documents(job, library) for job in jobs]
        # the library goes into the object store once, and only when a chunker learns from it (CHOP); any other
        # task is sent its own group's documents
        shared = self.ray.put(list(library)) if any(o is None for o in own) else None
        position: dict[Any, int] = {}
        pending: list[Any] = []
        for j, job in enumerate(jobs):
            if len(pending) >= self.workers:  # a task more only as one finishes
                ready, pending = self.ray.wait(pending, num_returns=1)
                yield position[ready[0]], self._get(ready[0])
            documents, indices = own[j] or (shared, job.indices)
            ref = task.remote(job.chunker, settings, documents, indices)
            position[ref] = j
            pending.append(ref)
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1)
            yield position[ready[0]], self._get(ready[0])

    def embed(self, settings: Settings, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
        if not batches:
            return
        from ray.util import ActorPool

        actor = self.ray.remote(num_cpus=1)(_EmbedActor)
        actors = [actor.remote(settings) for _ in range(min(self.workers, len(batches)))]
        try:
            pool = ActorPool(actors)
            for b, batch in enumerate(batches):
                pool.submit(lambda a, v: a.embed.remote(*v), (b, list(batch)))
            while pool.has_next():
                yield self._unwrapped(pool.get_next_unordered)
        finally:
            for a in actors:
                self.ray.kill(a)

    def _get(self, ref: Any) -> Any:
        return self._unwrapped(lambda: self.ray.get(ref))

    def _unwrapped(self, fetch: Any) -> Any:
        """A task's result; a task that failed with a ChunkLensError raises that error's one line here."""
        try:
            return fetch()
        except self.ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, ChunkLensError):
                raise cause from None
            raise
