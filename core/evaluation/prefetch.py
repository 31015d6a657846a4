"""The bench's heavy stages done ahead, in parallel, into the caches the bench reads (`core bench --executor ray`).

`prefetch` computes what `core.evaluation.bench.bench_dataset` would compute one step after another (each chunker's
chunk run over the documents, then the vectors of its chunks) on an `Executor`'s workers, and the driver writes the
results where the single-process bench looks first: the chunk run into the workspace's chunk-run cache under its
`run_key`, the vectors into the embedder's vector cache. The bench then runs unchanged and finds everything cached,
so its figures are the local run's by construction: the same chunks (the chunkers are deterministic, and a
chunker that learns the library, CHOP, is prepared on all of it on each worker, as `chunk_documents` prepares it;
any other is sent its own documents only), and the same vectors (the default
MiniLM on onnxruntime embeds one text per call, so a vector depends on its text only, not on its batch).

Work is keyed by document and chunker identity, so a killed run resumes: each finished group of documents is kept
as a part under `chunk_runs/parts/` (keyed by the whole run's key and the group's documents) until its run is
complete, and each finished batch of vectors is in the vector cache. Services a chunker needs are built on the
worker from the settings and the worker's own environment (`worker_context`): no API key travels with the work.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from core.chunkers.base import Chunker, ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ChunkLensError
from core.infra.jsonio import JsonObject
from core.infra.storage import write_atomically
from core.llm.base import ModelUse
from core.pipeline import ProgressFn, corpus_fingerprint, load_chunk_run, run_key
from core.schema.chunks import Chunk, SpanMismatch, check_spans
from core.schema.documents import Document
from core.services import Services, provide
from core.settings import Settings
from core.store.embeddings import CachedEmbedder, EmbeddingCache, by_length
from core.store.index import collection_name

#: documents per chunking task at most: a finished group is kept, so a killed run loses at most this many per
#: worker; a task of a chunker that learns the library prepares it on all of it (CHOP's extractor), so groups are
#: not made smaller than the workers need to be kept busy (`groups_of`)
MAX_GROUP = 32
#: concurrent requests to an OpenAI-compatible embedding server (each within the request limits of
#: `core.llm.budget`, which every call is charged to)
SERVER_REQUESTS = 4


@dataclass(frozen=True)
class GroupJob:
    """One chunking task: `chunker` (built without services) over the documents at `indices` of the library."""

    chunker: Chunker
    indices: tuple[int, ...]


class Executor(Protocol):
    """Where the work runs: `workers` in parallel; results are yielded as they finish, by their job's position."""

    name: str
    workers: int

    def chunk(self, settings: Settings, library: Sequence[Document],
              jobs: Sequence[GroupJob]) -> Iterator[tuple[int, GroupResult]]: ...

    def embed(self, settings: Settings, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]: ...


def worker_context(settings: Settings, needs: Sequence[str]) -> ChunkerContext:
    """The services a chunker needs, built on a worker as `core.services.build_services` builds them (the embedder,
    then each needed factory: `provide`), without the store; keys from the worker's own environment
    (`KeyRing.operator` over the addresses the settings name, as the command line trusts them)."""
    if not needs:
        return ChunkerContext()
    from core.infra.keys import KeyRing
    from core.infra.workspace import Workspace
    from core.store.embedders import make_embedder

    keys = KeyRing.operator([settings.embedder_base_url, settings.model_server_url, settings.rerank_model])
    ws = Workspace.open(settings.workspace)
    embedder = make_embedder(settings.embedder, long_text=settings.long_text, cache_dir=ws.cache,
                             base_url=settings.embedder_base_url or None,
                             api_key=keys.key_for(settings.embedder_base_url))
    return ChunkerContext({"embedder": embedder, **provide(settings, ws, embedder, keys, needs)})


@dataclass(frozen=True)
class ChunkPart:
    """A group of documents' share of a chunk run: its chunks in document order and its chunker's traces by doc id.
    What a part file under `chunk_runs/parts/` holds, and, joined over the groups, the whole run's cache file."""

    chunks: tuple[Chunk, ...]
    traces: dict[str, JsonObject]

    def to_json(self) -> JsonObject:
        """As `core.pipeline.chunk_documents` caches a run: the chunks as `Chunk.to_dict`, then the traces."""
        return {"chunks": [c.to_dict() for c in self.chunks], "traces": dict(self.traces)}

    @classmethod
    def from_json(cls, text: str) -> ChunkPart:
        """A part read back from its file's text (each chunk as `Chunk.to_dict` wrote it, its derived `chunk_id`
        dropped), unchecked: the reader holds its chunks to their documents (`check_spans`), as
        `core.pipeline.load_chunk_run` does. ValueError, KeyError, TypeError or AttributeError when it is not one."""
        data = json.loads(text)
        if not isinstance(data["traces"], dict):
            raise TypeError("a part's traces are not an object")
        return cls(tuple(Chunk(**{k: v for k, v in c.items() if k != "chunk_id"}) for c in data["chunks"]),
                   data["traces"])

    @classmethod
    def joined(cls, parts: Sequence[ChunkPart]) -> ChunkPart:
        return cls(tuple(c for p in parts for c in p.chunks), {k: v for p in parts for k, v in p.traces.items()})


@dataclass(frozen=True)
class GroupResult:
    """What one chunking task sends back to the driver (pickled by Ray, never written): the identity the
    worker's services gave the chunker, the group's part, what it asked a model (`ModelUse.counts`: empty for a
    chunker that asks none) and its seconds."""

    identity: str
    part: ChunkPart
    llm: dict[str, int]
    seconds: float


def chunk_group(chunker: Chunker, settings: Settings, library: Sequence[Document],
                indices: Sequence[int]) -> GroupResult:
    """One task: `chunker` prepared on `library` (the whole library for a chunker that learns it, else the task's
    own documents: `task_documents`), run over the documents at `indices`."""
    started = time.perf_counter()
    chunker.context = worker_context(settings, chunker.needs)
    model = ModelUse.start(chunker.context.get, chunker.needs)
    chunker.prepare(library)
    chunks: list[Chunk] = []
    traces: dict[str, JsonObject] = {}
    for i in indices:
        result = chunker.run(library[i])
        chunks.extend(result.chunks)
        if result.trace:
            traces[library[i].doc_id] = result.trace
    return GroupResult(chunker.identity, ChunkPart(tuple(chunks), traces), model.counts() if model else {},
                       time.perf_counter() - started)


def learns_from_library(chunker: Chunker) -> bool:
    """Whether `chunker` reads the whole library before it chunks (it overrides `Chunker.prepare`: CHOP, whose
    `extract` backend learns the library); any other chunker's task needs its own group's documents only."""
    return type(chunker).prepare is not Chunker.prepare


def task_documents(job: GroupJob, library: Sequence[Document]) -> tuple[list[Document], tuple[int, ...]] | None:
    """What a chunking task is sent instead of the whole library: its group's documents and their positions in
    that list, for a chunker that does not learn from the library; None when it does (it gets the library)."""
    if learns_from_library(job.chunker):
        return None
    return [library[i] for i in job.indices], tuple(range(len(job.indices)))


def groups_of(n_docs: int, workers: int) -> list[tuple[int, ...]]:
    """Consecutive groups of document positions: about four per worker, at most MAX_GROUP documents each."""
    if n_docs == 0:
        return []
    size = max(1, min(MAX_GROUP, math.ceil(n_docs / (4 * max(1, workers)))))
    return [tuple(range(i, min(i + size, n_docs))) for i in range(0, n_docs, size)]


def part_path(cache_dir: Path, whole_key: str, group: Sequence[Document]) -> Path:
    """Where a finished group of a run not yet complete is kept: named by the whole run and the group's documents."""
    digest = hashlib.sha256(f"{whole_key}|{corpus_fingerprint(group)}".encode()).hexdigest()[:32]
    return cache_dir / "parts" / f"{digest}.json"


def _read_part(path: Path, group: Sequence[Document]) -> ChunkPart | None:
    """A kept part that still fits its documents, or None (a damaged one is deleted, as chunk runs are)."""
    if not path.exists():
        return None
    try:
        part = ChunkPart.from_json(path.read_text(encoding="utf-8"))
        check_spans(part.chunks, group)
        return part
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, SpanMismatch):
        path.unlink(missing_ok=True)
        return None


@dataclass
class PrefetchReport:
    """What the executor did, for the bench report's `executor` key."""

    executor: str
    workers: int
    chunk_tasks: int = 0
    chunk_tasks_kept: int = 0  # parts a killed run had finished
    runs_cached: int = 0  # chunk runs already complete in the cache
    chunk_seconds: float = 0.0
    vectors_computed: int = 0
    embed_batches: int = 0
    embed_seconds: float = 0.0
    #: what the chunking tasks asked a model, by chunker spec: {"calls", "tokens_in", "tokens_out"} (chunkers that
    #: ask none are left out); the bench's own counts see only the driver, so `BenchReport.with_llm_use` adds these
    #: to them
    llm_use: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return asdict(self)


def prefetch(documents: Sequence[Document], specs: Sequence[str], services: Services, executor: Executor,
             cnm_examples: Mapping[str, Mapping[str, str]] | None = None,
             progress: ProgressFn | None = None) -> PrefetchReport:
    """Every chunk run and vector the bench will need for `specs` over `documents` (the documents as the bench
    reads them: joined when it joins), computed on `executor` and written into the workspace's caches."""
    report = PrefetchReport(executor.name, executor.workers)
    cache_dir = services.workspace.chunk_runs
    context = services.context()
    chunkers = [make_chunker(spec, context) for spec in specs]
    t0 = time.perf_counter()
    _chunk_runs(documents, specs, chunkers, services.settings, cache_dir, executor, report, progress)
    report.chunk_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    texts = _texts_to_embed(documents, chunkers, services, cnm_examples, cache_dir)
    _embed(texts, services, executor, report, progress)
    report.embed_seconds = time.perf_counter() - t1
    return report


def _chunk_runs(documents: Sequence[Document], specs: Sequence[str], chunkers: Sequence[Chunker],
                settings: Settings, cache_dir: Path, executor: Executor, report: PrefetchReport,
                progress: ProgressFn | None) -> None:
    """Each chunker's run over `documents`, unless cached: its groups on the executor, kept as they finish, then
    the whole run written under its `run_key` and its parts removed."""
    groups = groups_of(len(documents), executor.workers)
    jobs: list[GroupJob] = []
    slots: list[tuple[int, int]] = []  # each job's (chunker, group)
    parts: dict[int, list[ChunkPart | None]] = {}
    for n, (spec, chunker) in enumerate(zip(specs, chunkers)):
        whole = run_key(documents, chunker.identity)
        if (cache_dir / f"{whole}.json").exists():
            report.runs_cached += 1
            continue
        parts[n] = []
        for g, indices in enumerate(groups):
            group = [documents[i] for i in indices]
            kept = _read_part(part_path(cache_dir, whole, group), group)
            parts[n].append(kept)
            if kept is None:
                jobs.append(GroupJob(make_chunker(spec), indices))
                slots.append((n, g))
            else:
                report.chunk_tasks_kept += 1
    report.chunk_tasks = len(jobs)
    for done, (j, result) in enumerate(executor.chunk(settings, documents, jobs), start=1):
        n, g = slots[j]
        if result.identity != chunkers[n].identity:
            raise ChunkLensError(f"a worker built {specs[n]} as '{result.identity[:200]}', not as this run's "
                                 f"'{chunkers[n].identity[:200]}': its services differ from this machine's")
        path = part_path(cache_dir, run_key(documents, chunkers[n].identity), [documents[i] for i in groups[g]])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(result.part.to_json()))
        if any(result.llm.values()):
            used = report.llm_use.setdefault(specs[n], {})
            for key, count in result.llm.items():
                used[key] = used.get(key, 0) + count
        parts[n][g] = result.part
        if progress:
            progress(f"chunk ({executor.name})", done, len(jobs))
    for n, run_parts in parts.items():
        _write_run(documents, chunkers[n], groups, run_parts, cache_dir)


def _write_run(documents: Sequence[Document], chunker: Chunker, groups: Sequence[tuple[int, ...]],
               parts: Sequence[ChunkPart | None], cache_dir: Path) -> None:
    """The whole run from its parts, in document order, checked and cached as `chunk_documents` caches it."""
    found = [p for p in parts if p is not None]
    if len(found) < len(parts):
        raise ChunkLensError(f"{chunker.spec}: a chunking task returned nothing; rerun to finish it")
    run = ChunkPart.joined(found)
    check_spans(run.chunks, documents)
    whole = run_key(documents, chunker.identity)
    write_atomically(cache_dir / f"{whole}.json", json.dumps(run.to_json()))
    for indices in groups:
        part_path(cache_dir, whole, [documents[i] for i in indices]).unlink(missing_ok=True)


def _texts_to_embed(documents: Sequence[Document], chunkers: Sequence[Chunker], services: Services,
                    cnm_examples: Mapping[str, Mapping[str, str]] | None, cache_dir: Path) -> list[str]:
    """The texts the bench will embed, each once, in the order it meets them: each run's index units (taught, as
    the bench teaches them), except runs whose collection is already complete in the store."""
    texts: list[str] = []
    corpus = corpus_fingerprint(documents)
    for chunker in chunkers:
        run = load_chunk_run(documents, chunker, cache_dir)
        if run is None:
            raise ChunkLensError(f"{chunker.spec}: its chunk run vanished from {cache_dir} before it was embedded")
        if cnm_examples and (taught := getattr(chunker, "taught", None)) is not None:
            run = taught(run, documents, cnm_examples)
        units = run.index_units()
        if services.store.has_complete(collection_name(corpus, run.identity, services.embedder.key), len(units)):
            continue
        texts.extend(c.embed_text for c in units)
    return list(dict.fromkeys(texts))


def _embed(texts: Sequence[str], services: Services, executor: Executor, report: PrefetchReport,
           progress: ProgressFn | None) -> None:
    """The vectors of `texts` not yet cached (the machine's shared vectors are copied, as `CachedEmbedder` copies
    them), computed in batches shortest first and written into the cache batch by batch as they come back."""
    embedder = services.embedder
    if not isinstance(embedder, CachedEmbedder):
        return  # no cache to fill: the bench embeds as it always does
    keys = {t: EmbeddingCache.key(embedder.key, t) for t in texts}
    found = embedder.cache.get_many(list(keys.values()), embedder.dim)
    if embedder.machine is not None and len(found) < len(keys):
        copied = embedder.machine.get_many([k for k in keys.values() if k not in found])
        if copied:
            embedder.cache.put_many(copied)
            found.update(copied)
    batches = length_batches([t for t in texts if keys[t] not in found], embedder.save_every)
    report.embed_batches = len(batches)
    results = (_server_embed(embedder, batches) if embedder.key.startswith("openai:")
               else executor.embed(services.settings, batches))
    for done, (b, vectors) in enumerate(results, start=1):
        embedder.cache.put_many({keys[t]: v for t, v in zip(batches[b], vectors)})
        report.vectors_computed += len(batches[b])
        if progress:
            progress(f"embed ({executor.name})", done, len(batches))


def length_batches(texts: Sequence[str], size: int) -> list[list[str]]:
    """`texts` shortest first (`by_length`: a batch is padded to its longest text) in batches of `size`: the
    embedding work an executor is given, here and in `bench.scale --executor ray`."""
    ordered = [texts[i] for i in by_length(texts)]
    return [ordered[i : i + size] for i in range(0, len(ordered), max(1, size))]


def _server_embed(embedder: CachedEmbedder, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
    """An embedding server's batches, SERVER_REQUESTS at a time, from this process (the server does the work)."""
    with ThreadPoolExecutor(SERVER_REQUESTS, thread_name_prefix="embed-server") as pool:
        # each request in a copy of this thread's context, so it is charged to the running request budget, if any
        futures = {pool.submit(contextvars.copy_context().run, embedder.inner.embed, list(batch)): b
                   for b, batch in enumerate(batches)}
        for future, b in futures.items():
            yield b, future.result()


class InlineExecutor:
    """Every task in this process, one after another: the executor the prefetch is tested with without Ray."""

    name = "inline"
    workers = 1

    def chunk(self, settings: Settings, library: Sequence[Document],
              jobs: Sequence[GroupJob]) -> Iterator[tuple[int, GroupResult]]:
        for j, job in enumerate(jobs):
            documents, indices = task_documents(job, library) or (library, job.indices)
            yield j, chunk_group(job.chunker, settings, documents, indices)

    def embed(self, settings: Settings, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
        from core.store.embedders import local_embedder

        inner = local_embedder(settings.embedder, settings.long_text)
        for b, batch in enumerate(batches):
            yield b, inner.embed(list(batch))
