"""Query latency: one question across several chunkers' collections of N chunks each, the way the app asks it.

    python -m bench.query [--chunks 10000] [--chunkers 6] [--questions 50] [--repeat 3] [--json OUT]
                          [--store embedded|host:port] [--cache DIR] [--profile]

The question goes through `core.workbench.ask_all` over `ChunkerResult`s, the same call the Query page makes,
searched in the app's default retrieval mode (hybrid: Chroma plus each run's BM25 index) or `--retrieval`,
with services from `build_services` (bundled MiniLM behind its sqlite vector cache, rule CNM backend, Chroma
embedded in a throwaway workspace, or a Chroma server with --store host:port).

The chunks are real: the corpora of ../shared/data (covid_qa, then chroma_eval, then emanual_galaxy) cut by the
real `naive-500t` chunker into windows of --chunk-tokens tokens (128, about 550 characters) with half overlap, the
first N kept (about 16,000 exist), and embedded with the bundled MiniLM. Embedding 60,000 chunks would cost most of
an hour on two shared cores, so ONE set of N chunk vectors is built (and kept in --cache, so reruns embed nothing)
and loaded into each chunker's own collection; each collection is labelled with one of the app's default chunker
specs, which decides how it is searched (the first six are plain top-k; `chop:retrieval=filter`, the eighth, extracts
the question's CNM first). A store's query cost depends on N, the dimension and k, not on which chunker cut the text.
The questions are covid_qa's, those whose gold spans lie in documents that were chunked whole, so every answer
is also scored against gold as the page does.

Timed: a warm-up question first (the first query of a collection loads its HNSW index; reported apart), then
every question once with a query vector the cache has never seen ("new question"), then --repeat - 1 more rounds
in which the vector comes from the cache ("asked again"). Each ask is split into query embedding (calls to the
services' embedder), store query (calls to the store's `query`) and the rest (building or fetching retrievers,
mapping ids to chunks, CNM extraction, scoring against gold), by timing those two calls where the page's path
makes them. Peak RSS is psutil's, sampled by `bench.perf.RssPeak`. With --store host:port the collections stay on
the server, so a rerun reuses them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import run_cli, run_offline
from bench.perf import RssPeak, machine
from core.infra.errors import ChunkLensError
from core.settings import retrieval_from_flags
from core.store.index import VectorStore

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_DATA = [SHARED / "covid_qa", SHARED / "chroma_eval", SHARED / "emanual_galaxy"]
DEFAULT_CACHE = Path.home() / ".cache" / "chunklens" / "bench-query"
TARGET_MS = 50.0


# --- timing the two calls the split needs ------------------------------------------------------------------------


@dataclass
class Watch:
    """Seconds spent inside the wrapped calls, by label."""

    seconds: dict[str, float] = field(default_factory=lambda: {"embed": 0.0, "store": 0.0})

    def snapshot(self) -> dict[str, float]:
        return dict(self.seconds)


class TimedEmbedder:
    """The services' real embedder, with the time spent in `embed` added to a Watch."""

    def __init__(self, inner: Any, watch: Watch) -> None:
        self.inner, self.watch, self.key = inner, watch, inner.key

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts, progress)
        finally:
            self.watch.seconds["embed"] += time.perf_counter() - t0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TimedStore(VectorStore):
    """The services' real VectorStore, with the time spent in `query` added to a Watch. It takes over the store's
    state (its client and open collections: the same objects, not a new client) rather than opening its own."""

    def __init__(self, inner: VectorStore, watch: Watch) -> None:  # not super().__init__: that makes a client
        self.__dict__.update(vars(inner))
        self.watch = watch

    def query(self, name: str, vectors: np.ndarray, k: int,
              where: dict[str, Any] | None = None) -> list[list[tuple[str, float]]]:
        t0 = time.perf_counter()
        try:
            return super().query(name, vectors, k, where)
        finally:
            self.watch.seconds["store"] += time.perf_counter() - t0


# --- building the collections ------------------------------------------------------------------------------------


@dataclass
class Material:
    """Real chunks of real text, the documents they cover and the questions whose gold they cover."""

    chunks: list[Any]
    documents: list[Any]
    questions: list[Any]
    chunk_spec: str


def real_chunks(folders: Sequence[Path], n: int, chunk_tokens: int) -> Material:
    """The first `n` chunks of the folders' documents, in order, cut by `naive-500t`; questions of the first folder
    whose references lie in documents chunked whole."""
    from core.chunkers.registry import make_chunker
    from core.ingest.datasets import load_dataset

    spec = f"naive-500t:size={chunk_tokens}:overlap={chunk_tokens // 2}"
    chunker = make_chunker(spec)
    chunks: list[Any] = []
    documents: list[Any] = []
    whole: set[str] = set()
    seen: set[str] = set()
    datasets = [load_dataset(f) for f in folders]
    for ds in datasets:
        for doc in ds.documents:
            if len(chunks) >= n:
                break
            if doc.doc_id in seen:
                raise ChunkLensError(f"document id '{doc.doc_id}' occurs in two of the folders; pass other --data")
            seen.add(doc.doc_id)
            got = chunker.chunk(doc).chunks
            room = n - len(chunks)
            if len(got) <= room:
                whole.add(doc.doc_id)
            chunks.extend(got[:room])
            documents.append(doc)
    if len(chunks) < n:
        raise ChunkLensError(f"the corpora give only {len(chunks):,} chunks of {chunk_tokens} tokens; "
                             "ask for fewer --chunks or smaller --chunk-tokens")
    questions = [q for q in datasets[0].questions if all(r.doc_id in whole for r in q.references)]
    return Material(chunks, documents, questions, spec)


def chunk_vectors(chunks: Sequence[Any], inner_embedder: Any, cache: Path) -> tuple[np.ndarray, int]:
    """The chunks' vectors through a persistent embedding cache (so a rerun embeds nothing); how many were new."""
    from core.store.embeddings import CachedEmbedder, EmbeddingCache

    cache.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(inner_embedder, EmbeddingCache(cache / "embeddings.sqlite"))
    vectors = embedder.embed([c.embed_text for c in chunks],
                             lambda d, t: print(f"embedding chunks {d:,}/{t:,}", file=sys.stderr, flush=True))
    return vectors, embedder.stats.computed


@dataclass
class Setup:
    services: Any
    results: dict[str, Any]
    questions: list[Any]
    material: Material
    watch: Watch
    seconds: dict[str, float]
    vectors_computed: int
    retrieval: Any = None  # core.store.retrieval.RetrievalSettings every chunker is searched with (None: the default)


def build_setup(workspace: Path, cache: Path, n_chunks: int, n_chunkers: int, n_questions: int,
                store: str = "embedded", data: Sequence[Path] = tuple(DEFAULT_DATA),
                chunk_tokens: int = 128) -> Setup:
    """Services as the app builds them, one collection of the same N real chunk vectors per chunker spec."""
    from core.pipeline import corpus_fingerprint
    from core.schema.runs import ChunkedRun, IndexedRun
    from core.services import build_services
    from core.settings import Settings
    from core.store.embeddings import CachedEmbedder
    from core.store.index import collection_name
    from core.workbench import DEFAULT_SPECS, ChunkerResult

    if not 1 <= n_chunkers <= len(DEFAULT_SPECS):
        raise ChunkLensError(f"--chunkers must be between 1 and {len(DEFAULT_SPECS)}")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    services = build_services(Settings(workspace=str(workspace), chroma_server="" if store == "embedded" else store))
    seconds["services"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    material = real_chunks(data, n_chunks, chunk_tokens)
    seconds["chunking"] = time.perf_counter() - t0
    questions = material.questions[:n_questions]
    if len(questions) < n_questions:
        raise ChunkLensError(f"only {len(questions)} questions have their gold inside the first {n_chunks:,} chunks")

    t0 = time.perf_counter()
    cached = services.embedder
    assert isinstance(cached, CachedEmbedder), "build_services puts the vector cache around every embedder"
    vectors, computed = chunk_vectors(material.chunks, cached.inner, cache)
    seconds["embedding"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    fingerprint = corpus_fingerprint(material.documents)
    results: dict[str, Any] = {}
    for spec in DEFAULT_SPECS[:n_chunkers]:
        identity = f"bench-query|{spec}|{material.chunk_spec}|n={n_chunks}"
        run = ChunkedRun(spec, identity, list(material.chunks))
        name = collection_name(fingerprint, identity, services.embedder.key)
        reused = services.store.has_complete(name, len(run.chunks))
        if not reused:
            services.store.build(name, run.chunks, vectors, {"chunker": identity, "corpus": fingerprint})
        indexed = IndexedRun(run, name, 0.0, 0.0, reused, 0, texts={d.doc_id: d.text for d in material.documents})
        results[spec] = ChunkerResult(spec, run, indexed)
        print(f"collection for {spec}: {'reused' if reused else 'built'}", file=sys.stderr, flush=True)
    seconds["indexing"] = time.perf_counter() - t0

    watch = Watch()
    services.embedder = TimedEmbedder(services.embedder, watch)
    services.store = TimedStore(services.store, watch)
    return Setup(services, results, questions, material, watch, seconds, computed)


# --- asking ------------------------------------------------------------------------------------------------------


@dataclass
class Ask:
    total: float
    embed: float
    store: float
    per_chunker: dict[str, float]

    @property
    def rest(self) -> float:
        return self.total - self.embed - self.store


def ask(setup: Setup, question: Any, k: int) -> tuple[Ask, dict[str, Any]]:
    """One question across every chunker through `ask_all`, timed and split."""
    from core.workbench import ask_all

    before = setup.watch.snapshot()
    t0 = time.perf_counter()
    answers = ask_all(setup.services, setup.results, question.text(), k, question, setup.retrieval)
    total = time.perf_counter() - t0
    after = setup.watch.snapshot()
    for spec, a in answers.items():
        if a.error or len(a.hits) != k:
            raise ChunkLensError(f"{spec} answered {question.qid} with {len(a.hits)} hits: {a.error}")
    return (Ask(total, after["embed"] - before["embed"], after["store"] - before["store"],
                {s: a.seconds for s, a in answers.items()}), answers)


def summary(asks: Sequence[Ask]) -> dict[str, Any]:
    """Percentiles of the whole question in ms, and the median of each part of it."""
    if not asks:
        return {}
    totals = np.array([a.total for a in asks]) * 1000

    def p50(values: Sequence[float]) -> float:
        return round(statistics.median(values) * 1000, 2)

    specs = list(asks[0].per_chunker)
    return {
        "questions": len(asks),
        "p50_ms": round(float(np.percentile(totals, 50)), 2),
        "p95_ms": round(float(np.percentile(totals, 95)), 2),
        "max_ms": round(float(totals.max()), 2),
        "split_p50_ms": {"query_embedding": p50([a.embed for a in asks]), "store_query": p50([a.store for a in asks]),
                         "rest": p50([a.rest for a in asks])},
        "per_chunker_p50_ms": {s: p50([a.per_chunker[s] for a in asks]) for s in specs},
    }


def profile(setup: Setup, k: int, top: int = 25) -> str:
    """cProfile of one more pass over the questions (after the timed ones, so it distorts none of them)."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for q in setup.questions:
        ask(setup, q, k)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def run(args: argparse.Namespace, workspace: Path) -> dict[str, Any]:
    with RssPeak() as whole:
        setup = build_setup(workspace, args.cache, args.chunks, args.chunkers, args.questions, args.store,
                            args.data, args.chunk_tokens)
        setup.retrieval = retrieval_from_flags(args.retrieval, None, None)
        t0 = time.perf_counter()
        for result in setup.results.values():  # each run's BM25 index, as the app builds it after indexing
            setup.services.lexical.for_collection(result.indexed.collection, result.run.index_units())
        setup.seconds["lexical_index"] = time.perf_counter() - t0
        spare = setup.material.questions[len(setup.questions):]
        warm, _ = ask(setup, (spare or setup.questions)[0], args.k)  # not among the timed ones, when there is one
        rounds: list[list[Ask]] = []
        with RssPeak() as asking:
            for r in range(args.repeat):
                rounds.append([ask(setup, q, args.k)[0] for q in setup.questions])
                print(f"round {r + 1}/{args.repeat}: p50 {summary(rounds[-1])['p50_ms']} ms", file=sys.stderr,
                      flush=True)
        hits = []
        for q in setup.questions[:5]:
            answers = ask(setup, q, args.k)[1]
            hits.append({s: [h.chunk.chunk_id for h in a.hits] for s, a in answers.items()})
    profiled = profile(setup, args.k) if args.profile else ""
    new = summary(rounds[0])
    report = {
        "input": {"data": [str(d) for d in args.data], "chunk_spec": setup.material.chunk_spec,
                  "chunks_per_collection": args.chunks, "chunkers": list(setup.results), "questions": args.questions,
                  "k": args.k, "store": args.store, "repeat": args.repeat,
                  "retrieval": setup.retrieval.describe(),
                  "vectors": "one set of real chunk vectors, loaded into every chunker's collection"},
        "machine": machine(),
        "setup_seconds": {k: round(v, 2) for k, v in setup.seconds.items()},
        "vectors_computed": setup.vectors_computed,
        "first_question_ms": round(warm.total * 1000, 2),
        "new_question": new,
        "asked_again": summary([a for rnd in rounds[1:] for a in rnd]),
        "peak_rss_mb": round(whole.peak / 2**20, 1),
        "query_peak_rss_mb": round(asking.peak / 2**20, 1),
        "target": {"p50_ms": TARGET_MS, "met": new["p50_ms"] < TARGET_MS},
        "sample_hits": hits,
    }
    if profiled:
        report["profile"] = profiled
    return report


def report_text(report: dict[str, Any]) -> str:
    inp, m = report["input"], report["machine"]
    lines = [
        f"query latency: {len(inp['chunkers'])} chunkers x {inp['chunks_per_collection']:,} chunks ({inp['chunk_spec']}"
        f" over {', '.join(Path(d).name for d in inp['data'])}), top-{inp['k']}, store {inp['store']}, "
        f"retrieval {inp.get('retrieval', {}).get('mode', 'dense')}",
        f"machine: {m['cpu_count']} CPUs, load {m['load_average_at_start']}, Python {m['python']}",
        f"set-up seconds: {report['setup_seconds']} (chunk vectors computed now: {report['vectors_computed']:,})",
        f"first question after indexing (loads each collection): {report['first_question_ms']:.1f} ms",
    ]
    for label, key in (("new question (query vector computed)", "new_question"),
                       ("asked again (query vector cached)", "asked_again")):
        s = report[key]
        if not s:
            continue
        split = s["split_p50_ms"]
        lines += [
            f"{label}, {s['questions']} asks: p50 {s['p50_ms']:.1f} ms, p95 {s['p95_ms']:.1f} ms, "
            f"max {s['max_ms']:.1f} ms",
            f"  split (median per question): query embedding {split['query_embedding']:.1f} ms, store query "
            f"{split['store_query']:.1f} ms, rest {split['rest']:.1f} ms",
            "  per chunker (median): " + ", ".join(f"{c} {v:.1f}" for c, v in s["per_chunker_p50_ms"].items()),
        ]
    target = report["target"]
    lines += [f"peak RSS: {report['peak_rss_mb']:,.0f} MB (while asking: {report['query_peak_rss_mb']:,.0f} MB)",
              f"target: p50 of a new question under {target['p50_ms']:.0f} ms: {'met' if target['met'] else 'MISSED'}"]
    if report.get("profile"):
        lines += ["", report["profile"]]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.query", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in each chunker's collection")
    parser.add_argument("--chunkers", type=int, default=6, help="how many of the app's default chunker specs")
    parser.add_argument("--questions", type=int, default=50, help="timed questions (covid_qa's)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the questions; the first is reported as "
                        "'new question', the others as 'asked again'")
    parser.add_argument("--k", type=int, default=5, help="top-k, as the app's default setting")
    parser.add_argument("--chunk-tokens", type=int, default=128, help="naive-500t window size (overlap is half)")
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA, help="qa-spans v1 folders, in order")
    parser.add_argument("--store", default="embedded", help="'embedded' (a throwaway workspace) or host:port")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="persistent cache of the chunk vectors")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON here")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one extra pass")
    parser.add_argument("--retrieval", default=None, metavar="dense|bm25|hybrid",
                        help="how every chunker is searched (default: the app's, hybrid)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the figures, write --json; returns the report."""
    args = build_parser().parse_args(argv)
    if min(args.chunks, args.questions, args.repeat, args.k, args.chunk_tokens) < 1:
        raise ChunkLensError("--chunks, --questions, --repeat, --k and --chunk-tokens must be at least 1")
    return run_offline("bench-query-", run, report_text, args)


if __name__ == "__main__":
    sys.exit(run_cli(main))
