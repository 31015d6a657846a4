"""Scale: how the cost of each stage grows with the work, and how a query's latency grows with the collection.

    python -m bench.scale [--data DIR] [--fraction 1.0] [--scales 1,2,4,8] [--chunker recursive]
                          [--embedder SPEC] [--growth-store embedded|server]
                          [--questions 50] [--k 5] [--sizes 10000,100000,300000] [--stores embedded,server]
                          [--noise 0.02] [--seed 0] [--skip-growth] [--skip-latency] [--json OUT]
                          [--executor local|ray] [--workers 1,2] [--ray-address auto|HOST:PORT]

Part 1, work growth. The corpus (emanual_galaxy, 19 manuals, 2.4 MB; the first --fraction of its documents by
count, at least one) is repeated m times for each --scales m; every repeat is a copy of each `Document` whose id
gets `-r<m>` (doc ids name workspace files, so they keep `core.ingest.documents.slugify`'s alphabet, which has no
`~`), so a scale-m corpus is m times the same work under unique ids. For each scale, timed apart: chunking
(`core.pipeline.chunk_documents` with one --chunker, the app's call, spans checked), embedding (the --embedder
called directly, WITHOUT the app's vector cache, so every repeat is really computed), indexing
(`VectorStore.build` into a fresh collection on --growth-store, deleted after the scale) and the store query
(each question's vector, one query per call at top --k after one warm-up query; the questions are embedded once,
one per call as the Query page does, and that cost is reported apart). Peak RSS of this process
(`bench.perf.RssPeak`) is sampled over each scale. Each stage's seconds are then fitted against MB by least
squares (seconds per MB and an intercept, the fixed cost), so what 10x the corpus costs can be read off.

With `--executor ray`, each scale's chunking and embedding are done again on Ray after the local ones, once per
--workers N, as `core bench --executor ray` does them (`core.evaluation.ray_executor.RayExecutor`): the chunking as
tasks over groups of documents (`prefetch.groups_of`, at most N in flight), the embedding of the same index units
(every repeat again, no cache) in N actors that each load the embedder once, in `prefetch.length_batches`. Each
stage is timed apart (the actors' start and model load inside the embedding), checked against the local run (the
same number of chunks, the same vectors), and reported as documents/s, chunks/s and vectors/s, the speed-up of N
workers over the fewest, and the overhead against the local executor's seconds for the same stages of that scale
(the report's `ray` key). Without --ray-address a local Ray instance of this process's CPUs is started for the run
(before part 1, so the local stages run beside it idle) and stopped at its end; every N must fit its CPUs. One
untimed chunking task per CPU first starts Ray's worker processes, so the first scale does not pay for them.

Part 2, query latency against collection size. Embedding 300,000 chunks would take most of a day on two shared
cores, so the vectors are tiled from real ones: the chunk vectors of part 1's 1x scale (or the 1x chunks embedded
now when part 1 is skipped or has no 1x scale), copy after copy until --sizes N, each copy perturbed with Gaussian
noise (--noise sigma per component, seeded) and re-normalised, so HNSW never sees exact duplicates (the report gives
the copies' mean cosine to their originals). Each tiled chunk is a real `Chunk`: the span of the first 200
characters of its original, under a copy's doc id (`-t<copy>`), stored as its text. Chroma keeps a full-text index
of the stored texts, so a whole recursive chunk (about 1,000 characters) costs about 10 KB of sqlite per chunk and
200 characters about 2.2 KB (measured at 5,000 chunks): about 1.2 GB per store at 300,000 chunks, sqlite and HNSW
files together, instead of about 3.5 GB. The collections are written with the app's `VectorStore.build` (its
batches) and queried through `VectorStore.query`, the Query page's path, on both store paths of --stores: Chroma
embedded (a PersistentClient in a temporary folder) and a real `chroma run` server this benchmark starts as a child
process on loopback (`bench.local_servers.ChromaServer`). For each (store, size): build seconds, the store folder's
size on disk, resident memory (this process's for embedded; the server process's for the server), then query p50 /
p95 / max over the questions' real query vectors (one query per call, after one warm-up), and a sanity check that a
few stored vectors find themselves first. Each (store, size) gets a store of its own in an empty folder (the server
path a server started on it and stopped after), so the folder's size and the memory are that collection's alone
(Chroma does not give back the disk of a deleted collection). The fit: p50 in ms per 100,000 chunks and per decade
of size, and p50(largest) / p50(smallest).

With the default flags almost all the time is part 1's embedding, 15 times 2.4 MB of text (about 45 s per MB on
two idle cores: most of an hour); --fraction and --scales shrink it. Progress goes to stderr, the figures to
stdout, and --json writes the report; it also names the scale-out paths past one machine (`scale_out`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench import run_cli, run_offline
from bench.perf import RssPeak, machine, release_memory
from core.infra.errors import ChunkLensError

if TYPE_CHECKING:
    from bench.local_servers import ChromaServer
    from core.chunkers.base import Chunker
    from core.schema.chunks import Chunk
    from core.schema.documents import Document
    from core.store.embeddings import Embedder
    from core.store.index import VectorStore

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "emanual_galaxy"
STORES = ("embedded", "server")
EXECUTORS = ("local", "ray")
#: the texts per embedding batch an actor is given (the vector cache's batch, as `core bench --executor ray` sends)
RAY_BATCH = 128
#: the largest difference allowed between a Ray actor's vector component and the local one (the same model, one
#: text per call: equal to the bit in `tests/integration/test_ray_executor.py`; this allows for float printing)
VECTOR_TOLERANCE = 1e-5
REPEAT_MARK = "-r"  # a scale's repeat r >= 2 of document `id` is `id-r<r>`
TILE_MARK = "-t"  # part 2's copy c of a chunk of document `id` lies in document `id-t<c>`
TILE_TEXT_CHARS = 200
TILE_BLOCK = 50_000  # rows of tiled vectors generated at a time (bounds the float temporaries)
SELF_CHECKS = 5


# --- the work ----------------------------------------------------------------------------------------------------


def kept_documents(docs: Sequence[Document], fraction: float) -> list[Document]:
    """The first `fraction` of `docs` by count, at least one."""
    if not 0 < fraction <= 1:
        raise ChunkLensError(f"--fraction must be in (0, 1], got {fraction}")
    return list(docs[:max(1, int(len(docs) * fraction))])


def repeated_documents(docs: Sequence[Document], times: int) -> list[Document]:
    """`docs` `times` times over: repeat 1 is `docs` as they are, repeat r a copy of each with id `<id>-r<r>` (its
    segments renamed alike); the same text, title and pages, so each repeat is the same work. Ids are checked
    unique."""
    out = list(docs)
    for r in range(2, times + 1):
        mark = f"{REPEAT_MARK}{r}"
        out += [replace(d, doc_id=d.doc_id + mark, page_starts=list(d.page_starts), notes=list(d.notes),
                        outline=list(d.outline), segments=[replace(s, doc_id=s.doc_id + mark) for s in d.segments])
                for d in docs]
    ids = [d.doc_id for d in out]
    if len(set(ids)) != len(ids):
        raise ChunkLensError(f"repeating the documents {times} times gives clashing ids (an id already ends in "
                             f"'{REPEAT_MARK}<n>')")
    return out


def text_mb(docs: Sequence[Document]) -> float:
    return sum(len(d.text.encode("utf-8")) for d in docs) / 1e6


# --- measuring ---------------------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(label: str, every: float = 0.1) -> Callable[[int, int], None]:
    """A (done, total) callback that prints `label` on stderr about every `every` of the way, and at the end."""
    shown = [-1.0]

    def show(done: int, total: int) -> None:
        share = done / total if total else 1.0
        if share >= 1.0 or share - shown[0] >= every:
            shown[0] = share
            log(f"{label} {done:,}/{total:,}")

    return show


def percentiles(ms: Sequence[float]) -> dict[str, Any]:
    values = np.asarray(ms, dtype=float)
    return {"p50_ms": round(float(np.percentile(values, 50)), 3), "p95_ms": round(float(np.percentile(values, 95)), 3),
            "max_ms": round(float(values.max()), 3)}


def time_queries(store: VectorStore, name: str, vectors: np.ndarray, k: int) -> dict[str, Any]:
    """One warm-up query (the first of a collection opens it and, embedded, loads its HNSW index), then each vector
    alone through `VectorStore.query`, timed."""
    t0 = time.perf_counter()
    store.query(name, vectors[:1], k)
    first_ms = (time.perf_counter() - t0) * 1000
    ms: list[float] = []
    fewest = k
    for v in vectors:
        t0 = time.perf_counter()
        hits = store.query(name, v[None, :], k)
        ms.append((time.perf_counter() - t0) * 1000)
        fewest = min(fewest, len(hits[0]))
    return {"questions": len(ms), "first_ms": round(first_ms, 3), **percentiles(ms), "fewest_hits": fewest}


def embed_questions(embedder: Embedder, texts: Sequence[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """Each question embedded alone, as the Query page embeds one; the vectors and the per-call percentiles."""
    rows, ms = [], []
    for text in texts:
        t0 = time.perf_counter()
        rows.append(embedder.embed([text])[0])
        ms.append((time.perf_counter() - t0) * 1000)
    return np.stack(rows).astype(np.float32), {"questions": len(ms), **percentiles(ms)}


def linear_fit(x: Sequence[float], y: Sequence[float]) -> dict[str, float] | None:
    """Least squares y = slope * x + intercept, with r²; None with fewer than two distinct x."""
    if len(set(x)) < 2:
        return None
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = float(((ys - (slope * xs + intercept)) ** 2).sum())
    total = float(((ys - ys.mean()) ** 2).sum())
    return {"slope": float(slope), "intercept": float(intercept), "r2": 1.0 - residual / total if total else 1.0}


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def server_rss_mb(server: ChromaServer) -> float | None:
    """Resident memory of the server process and its children."""
    import psutil

    if server.proc is None or server.proc.poll() is not None:
        return None
    proc = psutil.Process(server.proc.pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


@dataclass
class Opened:
    """A store of its own: the VectorStore, the folder holding its data, and the server when it is one."""

    store: VectorStore
    folder: Path
    server: ChromaServer | None = None

    def rss_mb(self) -> float | None:
        """Resident memory of what holds the index: the server process, or this one for the embedded store."""
        if self.server is not None:
            return server_rss_mb(self.server)
        import psutil

        return psutil.Process().memory_info().rss / 2**20


@contextlib.contextmanager
def fresh_store(which: str, folder: Path) -> Iterator[Opened]:
    """An empty store in the new folder `folder`: Chroma embedded there, or a `chroma run` child process serving it
    (stopped on exit)."""
    from bench.local_servers import ChromaServer
    from core.store.index import StoreSettings, VectorStore

    folder.mkdir(parents=True)
    if which == "embedded":
        yield Opened(VectorStore(StoreSettings(path=folder / "chroma")), folder / "chroma")
        return
    server = ChromaServer(folder / "chroma")
    log(f"starting a chroma server on port {server.port}")
    server.start(timeout=120)
    try:
        yield Opened(VectorStore(StoreSettings(host="127.0.0.1", port=server.port)), server.path, server)
    finally:
        server.stop(10)


def server_figures(opened: Opened) -> dict[str, Any]:
    server = opened.server
    return {} if server is None else {"server_port": server.port,
                                      "server_start_seconds": round(server.start_seconds, 3)}


# --- part 1: work growth -----------------------------------------------------------------------------------------


@dataclass
class Base:
    """The 1x corpus's index units and their vectors: what part 2 tiles."""

    units: list[Chunk]
    vectors: np.ndarray
    origin: str


def grow_scale(docs: Sequence[Document], times: int, chunker: Chunker, embedder: Embedder, store: VectorStore,
               qvecs: np.ndarray, k: int) -> tuple[dict[str, Any], Base]:
    """One scale: chunk, embed (uncached), index into a fresh collection, query; the collection is deleted after."""
    from core.chunkers.registry import chunker_class
    from core.pipeline import chunk_documents, corpus_fingerprint
    from core.store.index import collection_name

    corpus = repeated_documents(docs, times)
    release_memory()
    seconds: dict[str, float] = {}
    with RssPeak() as rss:
        t0 = time.perf_counter()
        run = chunk_documents(corpus, chunker)
        seconds["chunking"] = time.perf_counter() - t0
        units = run.index_units()
        log(f"{times}x: {len(corpus)} documents, {len(run.chunks):,} chunks")
        t0 = time.perf_counter()
        vectors = embedder.embed([u.embed_text for u in units], progress(f"{times}x embedding"))
        seconds["embedding"] = time.perf_counter() - t0
        fingerprint = corpus_fingerprint(corpus)
        name = collection_name(fingerprint, f"bench-scale|{run.identity}|x{times}", embedder.key)
        t0 = time.perf_counter()
        store.build(name, units, vectors, {"chunker": run.identity[:500], "embedder": embedder.key[:500],
                                           "corpus": fingerprint}, progress(f"{times}x indexing"),
                    chunker_class(run.spec).store_metadata)
        seconds["indexing"] = time.perf_counter() - t0
        query = time_queries(store, name, qvecs, k)
    store.delete(name)
    seconds["total"] = seconds["chunking"] + seconds["embedding"] + seconds["indexing"]
    row = {
        "scale": times, "documents": len(corpus), "doc_ids_unique": len({d.doc_id for d in corpus}) == len(corpus),
        "chars": sum(len(d.text) for d in corpus), "mb": round(text_mb(corpus), 4), "chunks": len(run.chunks),
        "index_units": len(units), "seconds": {s: round(v, 3) for s, v in seconds.items()}, "query": query,
        "peak_rss_mb": round(rss.peak / 2**20, 1), "rss_growth_mb": round((rss.peak - rss.start) / 2**20, 1),
    }
    log(f"{times}x: " + ", ".join(f"{s} {v:.2f} s" for s, v in seconds.items()) + f", query p50 {query['p50_ms']} ms")
    return row, Base(list(units), vectors, "the growth run's 1x scale")


def growth_fit(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each stage's seconds, the query p50 and the peak RSS fitted against MB of text."""
    mb = [r["mb"] for r in rows]
    out: dict[str, Any] = {}
    for stage in ("chunking", "embedding", "indexing", "total"):
        fit = linear_fit(mb, [r["seconds"][stage] for r in rows])
        out[stage] = fit and {"seconds_per_mb": round(fit["slope"], 4), "intercept_seconds": round(fit["intercept"], 4),
                              "mb_per_second": round(1 / fit["slope"], 4) if fit["slope"] > 0 else None,
                              "r2": round(fit["r2"], 4)}
    fit = linear_fit(mb, [r["query"]["p50_ms"] for r in rows])
    out["query_p50"] = fit and {"ms_per_mb": round(fit["slope"], 4), "intercept_ms": round(fit["intercept"], 4),
                                "r2": round(fit["r2"], 4)}
    fit = linear_fit(mb, [r["peak_rss_mb"] for r in rows])
    out["peak_rss"] = fit and {"mb_per_mb": round(fit["slope"], 2), "intercept_mb": round(fit["intercept"], 1),
                               "r2": round(fit["r2"], 4)}
    return out


def warm_up(doc: Document, chunker: Chunker, embedder: Embedder, store: VectorStore, qvecs: np.ndarray) -> float:
    """Untimed: the stages once on the first 3,000 characters of `doc` (a collection built, queried and deleted),
    so the first scale pays no first-call costs (tokenizer files, lazy imports, the store's first collection)."""
    from core.pipeline import chunk_documents

    t0 = time.perf_counter()
    units = chunk_documents([replace(doc, doc_id="bench-scale-warm-up", text=doc.text[:3000], page_starts=[],
                                     segments=[], outline=[])], chunker).index_units()
    texts = [u.embed_text for u in units]
    embedder.embed((texts * 40)[:40])  # more than SMALL_INPUT texts: the batch path the scales take
    store.build("bench-scale-warm-up", units, embedder.embed(texts), {"bench": "warm-up"})
    store.query("bench-scale-warm-up", qvecs[:1], 1)
    store.delete("bench-scale-warm-up")
    return time.perf_counter() - t0


def run_growth(args: argparse.Namespace, docs: Sequence[Document], chunker: Chunker, embedder: Embedder,
               store: VectorStore, qvecs: np.ndarray,
               on_ray: Callable[[Sequence[Document], dict[str, Any], Base], None] | None = None,
               ) -> tuple[dict[str, Any], Base | None]:
    """Each scale's stages in this process; `on_ray`, when given, then does that scale's again on Ray."""
    rows, base = [], None
    log(f"warm-up: {warm_up(docs[0], chunker, embedder, store, qvecs):.1f} s")
    for times in args.scales:
        row, got = grow_scale(docs, times, chunker, embedder, store, qvecs, args.k)
        rows.append(row)
        if on_ray is not None:
            on_ray(repeated_documents(docs, times), row, got)
        if times == 1:
            base = got
    return {"store": args.growth_store, "scales": rows, "fit_against_mb": growth_fit(rows)}, base


# --- part 1 on Ray ------------------------------------------------------------------------------------------------


def rates(documents: int, chunks: int, vectors: int, chunking: float, embedding: float) -> dict[str, Any]:
    """The two stages' seconds and what each does per second."""
    return {"chunking_seconds": round(chunking, 3), "embedding_seconds": round(embedding, 3),
            "documents_per_second": round(documents / chunking, 2) if chunking > 0 else None,
            "chunks_per_second": round(chunks / chunking, 2) if chunking > 0 else None,
            "vectors_per_second": round(vectors / embedding, 2) if embedding > 0 else None}


def _over(a: float, b: float) -> float | None:
    """a / b to three places; None when b rounded to nothing (a stage of under half a millisecond)."""
    return round(a / b, 3) if b > 0 else None


def ray_stages(ray: Any, workers: int, settings: Any, spec: str, corpus: Sequence[Document],
               texts: Sequence[str]) -> tuple[int, np.ndarray, float, float]:
    """Chunking and embedding of `corpus` on `workers` Ray workers, timed apart: the chunks made, the vectors of
    `texts` (in their order), and the two stages' seconds."""
    from core.chunkers.registry import make_chunker
    from core.evaluation.prefetch import GroupJob, groups_of, length_batches
    from core.evaluation.ray_executor import RayExecutor
    from core.store.embeddings import by_length

    executor = RayExecutor(ray, workers)
    jobs = [GroupJob(make_chunker(spec), indices) for indices in groups_of(len(corpus), workers)]
    t0 = time.perf_counter()
    chunks = sum(len(result.part.chunks) for _, result in executor.chunk(settings, corpus, jobs))
    chunking = time.perf_counter() - t0
    order = by_length(texts)  # the order length_batches puts them in
    batches = length_batches(texts, RAY_BATCH)
    got: dict[int, np.ndarray] = {}
    t0 = time.perf_counter()
    for b, vectors in executor.embed(settings, batches):
        got[b] = vectors
    embedding = time.perf_counter() - t0
    vectors = np.empty((len(texts), got[0].shape[1] if got else 0), dtype=np.float32)
    if got:
        vectors[order] = np.concatenate([got[b] for b in range(len(batches))])
    return chunks, vectors, chunking, embedding


def ray_scale(ray: Any, workers: Sequence[int], settings: Any, spec: str, corpus: Sequence[Document],
              row: dict[str, Any], local: Base) -> dict[str, Any]:
    """One scale on each worker count, checked against the local run's chunks and vectors; rates, the speed-up
    over the fewest workers and the overhead against the local seconds of the same stages."""
    texts = [u.embed_text for u in local.units]
    base = rates(len(corpus), row["chunks"], len(texts), row["seconds"]["chunking"], row["seconds"]["embedding"])
    runs: list[dict[str, Any]] = []
    for n in workers:
        chunks, vectors, chunking, embedding = ray_stages(ray, n, settings, spec, corpus, texts)
        if chunks != row["chunks"]:
            raise ChunkLensError(f"{row['scale']}x on {n} Ray workers made {chunks:,} chunks, the local run "
                                 f"{row['chunks']:,}")
        drift = float(np.abs(vectors - local.vectors).max()) if len(texts) else 0.0
        if drift > VECTOR_TOLERANCE:
            raise ChunkLensError(f"{row['scale']}x on {n} Ray workers: a vector differs from the local one by "
                                 f"{drift:.3g}")
        run = {"workers": n, "chunks": chunks, "vectors": len(vectors), "max_vector_difference": drift,
               **rates(len(corpus), chunks, len(vectors), chunking, embedding)}
        first = runs[0] if runs else run
        run["speedup_over_fewest"] = {s: _over(first[f"{s}_seconds"], run[f"{s}_seconds"])
                                      for s in ("chunking", "embedding")}
        run["overhead_against_local"] = {
            s: {"seconds": round(run[f"{s}_seconds"] - base[f"{s}_seconds"], 3),
                "ratio": _over(run[f"{s}_seconds"], base[f"{s}_seconds"])} for s in ("chunking", "embedding")}
        log(f"{row['scale']}x on {n} Ray worker(s): chunking {chunking:.2f} s, embedding {embedding:.2f} s "
            f"(local {base['chunking_seconds']:.2f} s, {base['embedding_seconds']:.2f} s)")
        runs.append(run)
    return {"scale": row["scale"], "documents": len(corpus), "chunks": row["chunks"], "vectors": len(texts),
            "local": base, "ray": runs}


def ray_warm_up(ray: Any, cpus: int, settings: Any, spec: str, doc: Document) -> float:
    """Untimed: one chunking task per CPU on the first 3,000 characters of `doc`, so Ray's worker processes are
    started (and have imported the chunkers) before the first scale is timed."""
    from core.chunkers.registry import make_chunker
    from core.evaluation.prefetch import GroupJob
    from core.evaluation.ray_executor import RayExecutor

    small = replace(doc, doc_id="bench-scale-warm-up", text=doc.text[:3000], page_starts=[], segments=[], outline=[])
    t0 = time.perf_counter()
    list(RayExecutor(ray, cpus).chunk(settings, [small], [GroupJob(make_chunker(spec), (0,))] * cpus))
    return time.perf_counter() - t0


@contextlib.contextmanager
def ray_part(args: argparse.Namespace, spec: str, first: Document,
             tmp: Path) -> Iterator[tuple[Callable[..., None], dict[str, Any]]]:
    """A Ray instance for the run (or the cluster at --ray-address, or the Ray already started in this process),
    the per-scale callback for `run_growth`, and the report's `ray` key it fills."""
    from core.evaluation.ray_executor import ray_executor
    from core.settings import Settings

    settings = Settings(workspace=str(tmp / "ray-workspace"), embedder=args.embedder)
    with ray_executor(args.ray_address) as cluster:
        if max(args.workers) > cluster.workers:
            raise ChunkLensError(f"--workers {max(args.workers)} is more than the {cluster.workers} CPUs Ray has here")
        out: dict[str, Any] = {"address": args.ray_address or "a local instance started for the run",
                               "cpus": cluster.workers, "workers": list(args.workers), "embed_batch": RAY_BATCH,
                               "warm_up_seconds": round(ray_warm_up(cluster.ray, cluster.workers, settings, spec,
                                                                    first), 3),
                               "scales": []}

        def on_scale(corpus: Sequence[Document], row: dict[str, Any], local: Base) -> None:
            out["scales"].append(ray_scale(cluster.ray, args.workers, settings, spec, corpus, row, local))

        yield on_scale, out


def embed_base(docs: Sequence[Document], chunker: Chunker, embedder: Embedder) -> Base:
    """The 1x corpus's index units, embedded now (part 1 did not run a 1x scale)."""
    from core.pipeline import chunk_documents

    units = chunk_documents(docs, chunker).index_units()
    vectors = embedder.embed([u.embed_text for u in units], progress("embedding the 1x chunks to tile"))
    return Base(list(units), vectors, "the 1x chunks, embedded for this part")


# --- part 2: latency against collection size ---------------------------------------------------------------------


def tiled_chunks(base: Sequence[Chunk], n: int) -> list[Chunk]:
    """`n` chunks, copy c of base chunk i at position c * len(base) + i: the span of its first TILE_TEXT_CHARS
    characters (the span contract holds against a copy of its document named `<doc_id>-t<c>`)."""
    from core.schema.chunks import Chunk
    from core.tokens import count_tokens_many

    shorts = [u.text[:TILE_TEXT_CHARS] for u in base]
    counts = count_tokens_many(shorts)
    out: list[Chunk] = []
    for c in range(math.ceil(n / len(base))):
        for u, text, count in zip(base, shorts, counts):
            if len(out) == n:
                break
            out.append(Chunk(f"{u.doc_id}{TILE_MARK}{c}", u.start, u.start + len(text), text, count, index=u.index,
                             child=u.child))
    return out


def tiled_vectors(base: np.ndarray, n: int, sigma: float, seed: int) -> np.ndarray:
    """`n` rows, row j a copy of base row j % len(base) plus N(0, sigma²) noise per component, re-normalised."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, TILE_BLOCK):
        stop = min(n, start + TILE_BLOCK)
        block = base[np.arange(start, stop) % len(base)] + sigma * rng.standard_normal(
            (stop - start, base.shape[1]), dtype=np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def latency_for(which: str, folder: Path, size: int, chunks: Sequence[Chunk], vectors: np.ndarray,
                qvecs: np.ndarray, k: int) -> dict[str, Any]:
    """One collection of `size` tiled chunks in a store of its own: built, measured, queried."""
    name = f"bench-scale-{size}"
    with fresh_store(which, folder) as opened:
        t0 = time.perf_counter()
        opened.store.build(name, chunks, vectors, {"bench": "scale", "size": size},
                           progress(f"{which} {size:,}: writing"))
        build = time.perf_counter() - t0
        disk, rss = folder_mb(opened.folder), opened.rss_mb()
        query = time_queries(opened.store, name, qvecs, k)
        probes = np.linspace(0, size - 1, num=min(SELF_CHECKS, size), dtype=int)
        found = opened.store.query(name, vectors[probes], 1)
        opened.store.delete(name)
        started = server_figures(opened)
    self_top1 = sum(bool(hits) and hits[0][0] == chunks[j].chunk_id for j, hits in zip(probes, found)) / len(probes)
    log(f"{which} {size:,}: build {build:.1f} s, query p50 {query['p50_ms']} ms, p95 {query['p95_ms']} ms")
    return {"store": which, "size": size, "build_seconds": round(build, 3),
            "vectors_per_second": round(size / build, 1) if build > 0 else None, "disk_mb": round(disk, 2),
            "rss_mb": None if rss is None else round(rss, 1),
            "rss_of": "the chroma server process" if which == "server" else "this process (embedded store, model)",
            "query": query, "self_top1": self_top1, **started}


def latency_fit(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per store: p50 against size (ms per 100,000 chunks) and against log10(size) (ms per decade), and the ratio
    of the largest size's p50 to the smallest's."""
    out: dict[str, Any] = {}
    for which in dict.fromkeys(r["store"] for r in rows):
        mine = sorted((r for r in rows if r["store"] == which), key=lambda r: r["size"])
        sizes, p50 = [r["size"] for r in mine], [r["query"]["p50_ms"] for r in mine]
        per_size = linear_fit([s / 1e5 for s in sizes], p50)
        per_decade = linear_fit([math.log10(s) for s in sizes], p50)
        out[which] = {
            "sizes": sizes, "p50_ms": p50,
            "ms_per_100k_chunks": per_size and round(per_size["slope"], 4),
            "r2_linear": per_size and round(per_size["r2"], 4),
            "ms_per_decade": per_decade and round(per_decade["slope"], 4),
            "r2_log10": per_decade and round(per_decade["r2"], 4),
            "p50_ratio_largest_to_smallest": round(p50[-1] / p50[0], 3) if len(mine) > 1 and p50[0] > 0 else None,
        }
    return out


def run_latency(args: argparse.Namespace, base: Base, qvecs: np.ndarray, tmp: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    cosine: float | None = None
    for size in sorted(args.sizes):
        chunks = tiled_chunks(base.units, size)
        ids = {c.chunk_id for c in chunks}
        if len(ids) != size:
            raise ChunkLensError(f"tiling {size:,} chunks gave {len(ids):,} distinct ids")
        vectors = tiled_vectors(base.vectors, size, args.noise, args.seed)
        if cosine is None:
            m = min(size, len(base.vectors))
            cosine = float(np.mean(np.sum(vectors[:m] * base.vectors[:m], axis=1)))
        for which in args.stores:
            rows.append(latency_for(which, tmp / f"{which}-{size}", size, chunks, vectors, qvecs, args.k))
        del chunks, vectors
        release_memory()
    return {"base_vectors": len(base.vectors), "base_from": base.origin, "noise_sigma": args.noise, "seed": args.seed,
            "noise_cosine_to_original": round(cosine or 0.0, 4), "text_chars_per_chunk": TILE_TEXT_CHARS,
            "runs": rows, "fit": latency_fit(rows)}


# --- the report --------------------------------------------------------------------------------------------------

SCALE_OUT = {
    "vector_store": "past one machine's embedded Chroma: a Chroma server or cluster (`chroma run --path DIR --port "
                    "8000`, or a distributed / hosted Chroma), named with `python -m core bench --chroma HOST:PORT` "
                    "or the sidebar's 'Chroma server (host:port)' (the setting chroma_server); this benchmark's "
                    "'server' store is that path",
    "embedding": "an OpenAI-compatible embedding server (OpenAI, vLLM, Ollama, llama.cpp, TEI): `--embedder "
                 "openai:<model> --embedder-base-url http://HOST:PORT/v1` (the sidebar's Embedder and Embedding "
                 "server base URL fields, the settings embedder and embedder_base_url); the key comes from "
                 "OPENAI_API_KEY or the sidebar, and a server on its own base URL needs none",
}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
            for row in [header, ["-" * w for w in widths], *rows]]


def _line_fit(label: str, fit: dict[str, Any] | None) -> str:
    if not fit:
        return f"  {label}: n/a (one scale)"
    rate = f", {fit['mb_per_second']:.3g} MB/s" if fit.get("mb_per_second") else ""
    return (f"  {label}: {fit['seconds_per_mb']:.4g} s/MB {fit['intercept_seconds']:+.3g} s "
            f"(r² {fit['r2']:.3f}{rate})")


def _ratio(value: float | None, form: str = ".2f") -> str:
    return "n/a" if value is None else format(value, form)


def ray_text(ray: dict[str, Any]) -> list[str]:
    """Part 1's stages on Ray per worker count, beside the local executor's on the same scale."""
    rows = []
    for sc in ray["scales"]:
        for r in [{"workers": "local", **sc["local"]}, *sc["ray"]]:
            up, over = r.get("speedup_over_fewest"), r.get("overhead_against_local")
            rows.append([f"{sc['scale']}x", str(r["workers"]), f"{sc['documents']}", f"{sc['chunks']:,}",
                         f"{r['chunking_seconds']:.3f}", _ratio(r["documents_per_second"], ",.2f"),
                         _ratio(r["chunks_per_second"], ",.1f"), f"{r['embedding_seconds']:.2f}",
                         _ratio(r["vectors_per_second"], ",.1f"),
                         " / ".join(_ratio(up[s]) for s in ("chunking", "embedding")) if up else "",
                         " / ".join(_ratio(over[s]["ratio"]) for s in ("chunking", "embedding")) if over else ""])
    return [f"part 1 on Ray ({ray['address']}, {ray['cpus']} CPUs; workers {','.join(map(str, ray['workers']))}; "
            f"embedding batches of {ray['embed_batch']} texts, actors' start and model load included)",
            *_table(["scale", "workers", "docs", "chunks", "chunking s", "docs/s", "chunks/s", "embedding s",
                     "vectors/s", "speed-up chunk / embed", "x local chunk / embed"], rows),
            f"speed-up: over {ray['workers'][0]} worker(s); x local: Ray's seconds over the local executor's"]


def report_text(report: dict[str, Any]) -> str:
    inp, m = report["input"], report["machine"]
    qe = report["query_embedding"]
    lines = [
        f"scale: {Path(inp['data']).name}, {inp['documents']} of {inp['documents_in_set']} documents "
        f"({inp['mb']:.3f} MB), chunker {inp['chunker']}, embedder {inp['embedder']}, top-{inp['k']}, "
        f"{inp['questions']} questions",
        f"machine: {m['cpu_count']} CPUs, load {m['load_average_at_start']}, Python {m['python']}",
        f"set-up seconds: {report['setup_seconds']}",
        f"query embedding, one question per call: p50 {qe['p50_ms']:.1f} ms, p95 {qe['p95_ms']:.1f} ms",
    ]
    growth = report.get("growth")
    if growth:
        rows = [[f"{r['scale']}x", f"{r['mb']:.3f}", f"{r['chunks']:,}", f"{r['seconds']['chunking']:.2f}",
                 f"{r['seconds']['embedding']:.2f}", f"{r['seconds']['indexing']:.2f}",
                 f"{r['query']['p50_ms']:.2f} / {r['query']['p95_ms']:.2f}",
                 f"{r['peak_rss_mb']:,.0f} (+{r['rss_growth_mb']:,.0f})"] for r in growth["scales"]]
        fit = growth["fit_against_mb"]
        lines += ["", f"work growth (index on the {growth['store']} store; embedding without the vector cache)",
                  *_table(["scale", "MB", "chunks", "chunking s", "embedding s", "indexing s",
                           "query p50 / p95 ms", "peak RSS MB (+growth)"], rows),
                  "fit of seconds against MB (least squares):",
                  *(_line_fit(stage, fit[stage]) for stage in ("chunking", "embedding", "indexing", "total"))]
        if fit["query_p50"]:
            lines.append(f"  query p50: {fit['query_p50']['ms_per_mb']:.4g} ms/MB "
                         f"{fit['query_p50']['intercept_ms']:+.3g} ms (r² {fit['query_p50']['r2']:.3f})")
        if fit["peak_rss"]:
            lines.append(f"  peak RSS: {fit['peak_rss']['mb_per_mb']:.4g} MB per MB of text "
                         f"{fit['peak_rss']['intercept_mb']:+.4g} MB (r² {fit['peak_rss']['r2']:.3f})")
    latency = report.get("latency")
    if latency:
        rows = [[r["store"], f"{r['size']:,}", f"{r['build_seconds']:.2f}", f"{r['vectors_per_second'] or 0:,.0f}",
                 f"{r['disk_mb']:,.1f}", "" if r["rss_mb"] is None else f"{r['rss_mb']:,.0f}",
                 f"{r['query']['first_ms']:.2f}", f"{r['query']['p50_ms']:.2f}", f"{r['query']['p95_ms']:.2f}",
                 f"{r['query']['max_ms']:.2f}", f"{r['self_top1']:.0%}"] for r in latency["runs"]]
        lines += ["", f"query latency against collection size (tiled from {latency['base_vectors']:,} real vectors, "
                      f"{latency['base_from']}; noise sigma {latency['noise_sigma']}, mean cosine to the original "
                      f"{latency['noise_cosine_to_original']}; {latency['text_chars_per_chunk']} characters of text "
                      "per chunk)",
                  *_table(["store", "chunks", "build s", "vectors/s", "disk MB", "RSS MB", "first ms", "p50 ms",
                           "p95 ms", "max ms", "self top-1"], rows),
                  "RSS: this process for embedded (model included), the chroma server process for server"]
        for which, f in latency["fit"].items():
            if f["ms_per_100k_chunks"] is None:
                continue
            lines.append(f"  {which}: p50 {f['ms_per_100k_chunks']:+.3f} ms per 100k chunks (r² {f['r2_linear']:.3f}), "
                         f"{f['ms_per_decade']:+.3f} ms per decade (r² {f['r2_log10']:.3f}); p50({f['sizes'][-1]:,}) "
                         f"/ p50({f['sizes'][0]:,}) = {f['p50_ratio_largest_to_smallest']}")
    if report.get("ray"):
        lines += ["", *ray_text(report["ray"])]
    lines += ["", "scale out:", *(f"  {k}: {v}" for k, v in report["scale_out"].items())]
    return "\n".join(lines)


# --- entry point -------------------------------------------------------------------------------------------------


def _positive_ints(text: str) -> list[int]:
    try:
        values = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"want whole numbers separated by commas, got '{text}'") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"want whole numbers of at least 1, got '{text}'")
    return list(dict.fromkeys(values))


def _stores(text: str) -> list[str]:
    names = list(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    if not names or any(n not in STORES for n in names):
        raise argparse.ArgumentTypeError(f"want some of {','.join(STORES)}, got '{text}'")
    return names


def build_parser() -> argparse.ArgumentParser:
    from core.settings import Settings

    default_embedder = Settings.model_fields["embedder"].default
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="qa-spans v1 folder (default emanual_galaxy)")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="keep only the first fraction of the documents, by count (at least one)")
    parser.add_argument("--scales", type=_positive_ints, default=[1, 2, 4, 8], metavar="M[,M...]",
                        help="part 1: the corpus repeated M times")
    parser.add_argument("--chunker", default="recursive", help="part 1's chunker spec (needing at most an embedder)")
    parser.add_argument("--embedder", default=default_embedder,
                        help=f"embedder spec: {default_embedder} (the app's default), bundled:all-MiniLM-L6-v2, a "
                             "folder, an HF id, openai:<model>")
    parser.add_argument("--growth-store", choices=STORES, default="embedded", help="part 1's store")
    parser.add_argument("--questions", type=int, default=50, help="the data set's first N questions, as queries")
    parser.add_argument("--k", type=int, default=5, help="top-k of every query")
    parser.add_argument("--sizes", type=_positive_ints, default=[10_000, 100_000, 300_000], metavar="N[,N...]",
                        help="part 2: chunks per collection")
    parser.add_argument("--stores", type=_stores, default=list(STORES), metavar="embedded,server",
                        help="part 2's store paths")
    parser.add_argument("--noise", type=float, default=0.02, help="part 2: Gaussian sigma per vector component")
    parser.add_argument("--seed", type=int, default=0, help="part 2: seed of the noise")
    parser.add_argument("--skip-growth", action="store_true", help="run part 2 only")
    parser.add_argument("--skip-latency", action="store_true", help="run part 1 only")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the report as JSON here")
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="ray: part 1's chunking and embedding also done on Ray, per --workers count")
    parser.add_argument("--workers", type=_positive_ints, default=[1, 2], metavar="N[,N...]",
                        help="--executor ray: the Ray worker counts to measure (each at most Ray's CPUs)")
    parser.add_argument("--ray-address", default=None, metavar="auto|HOST:PORT",
                        help="--executor ray: join this Ray cluster instead of starting a local instance")
    return parser


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.infra.keys import KeyRing
    from core.ingest.datasets import load_dataset
    from core.store.embedders import make_embedder

    dataset = load_dataset(args.data)
    docs = kept_documents(dataset.documents, args.fraction)
    if len(dataset.questions) < args.questions:
        raise ChunkLensError(f"{dataset.name} has only {len(dataset.questions)} questions; ask for fewer --questions")
    questions = [q.text() for q in dataset.questions[:args.questions]]
    setup: dict[str, float] = {}
    t0 = time.perf_counter()
    # no cache_dir: no vector cache, every text is computed; an openai:<model> embedder gets the server's key for
    # api.openai.com or OPENAI_BASE_URL (core.infra.keys)
    embedder = make_embedder(args.embedder, api_key=KeyRing.operator(()).key_for(None))
    embedder.embed(["Warm the model up."])
    setup["embedder_load"] = round(time.perf_counter() - t0, 3)
    chunker = make_chunker(args.chunker, ChunkerContext(embedder=embedder))
    qvecs, query_embedding = embed_questions(embedder, questions)

    report: dict[str, Any] = {
        "input": {"data": str(args.data), "documents": len(docs), "documents_in_set": len(dataset.documents),
                  "fraction": args.fraction, "mb": round(text_mb(docs), 4), "chunker": chunker.spec,
                  "embedder": embedder.key, "embedder_spec": args.embedder, "vector_cache": False,
                  "questions": len(questions), "k": args.k,
                  "scales": None if args.skip_growth else args.scales,
                  "growth_store": None if args.skip_growth else args.growth_store,
                  "sizes": None if args.skip_latency else sorted(args.sizes),
                  "stores": None if args.skip_latency else args.stores},
        "machine": machine(),
        "setup_seconds": setup,
        "query_embedding": query_embedding,
    }
    base: Base | None = None
    if not args.skip_growth:
        with contextlib.ExitStack() as stack:
            on_ray = None
            if args.executor == "ray":
                on_ray, report["ray"] = stack.enter_context(ray_part(args, chunker.spec, docs[0], tmp))
            opened = stack.enter_context(fresh_store(args.growth_store, tmp / "growth"))
            report["growth"], base = run_growth(args, docs, chunker, embedder, opened.store, qvecs, on_ray)
            report["growth"].update(server_figures(opened))
    if not args.skip_latency:
        if base is None:
            base = embed_base(docs, chunker, embedder)
        report["latency"] = run_latency(args, base, qvecs, tmp)
    report["scale_out"] = SCALE_OUT
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the figures, write --json; returns the report."""
    args = build_parser().parse_args(argv)
    if args.skip_growth and args.skip_latency:
        raise ChunkLensError("--skip-growth and --skip-latency together leave nothing to run")
    if min(args.questions, args.k) < 1 or args.noise < 0:
        raise ChunkLensError("--questions and --k must be at least 1, --noise at least 0")
    if args.executor == "ray":
        if args.skip_growth:
            raise ChunkLensError("--executor ray measures part 1's stages; it has nothing to do with --skip-growth")
        if args.embedder.startswith("openai:"):
            raise ChunkLensError("--executor ray measures embedding actors on Ray's workers; an embedding server "
                                 "embeds on its own side (`core bench` sends it concurrent requests instead)")
        args.workers = sorted(args.workers)
    elif args.ray_address:
        raise ChunkLensError("--ray-address needs --executor ray")
    return run_offline("bench-scale-", run, report_text, args)


if __name__ == "__main__":
    sys.exit(run_cli(main))
