"""Chunking speed: our chunkers against Chonkie and LangChain on the same text, and every registered peer chunker
beside them, next to the floors.

    python -m bench.perf [--data DIR] [--repeat 3] [--families token,recursive,peers,semantic]
                         [--semantic-chars 200000] [--chars N] [--json OUT]

Four families, each with a floor, the work none of its chunkers can skip:
- token and recursive chunkers work on the whole text; floor: one tiktoken cl100k pass (`encode_ordinary`);
- peers: every registered peer chunker (core/chunkers/peers, enumerated from the registry, so a new peer joins by
  registering) at its library's defaults, run as the app runs it (`make_chunker(spec).run`, the library's call and
  the placing of its chunks as spans), beside ours run the same way; floor: the tiktoken pass. A peer that embeds
  (it needs the embedder) runs in the semantic family instead, on the same model object as ours;
- embedding chunkers work on the first --semantic-chars characters; floor: one MiniLM pass over its sentences.

Besides the floors, each of ours that re-implements what a library does is held to be at least as fast as that
library (`MIRRORS`: which of ours mirrors which, and why).

Every semantic chunker, ours and the peers', is handed the same sentence-transformers model object, so only
the chunking around the model differs. Our cosine / semantic use an embedder without the on-disk vector cache:
with it a rerun would embed nothing and the comparison would mean nothing.

Set-up (building a chunker, splitting sentences for the floor) is not timed. Repeats are interleaved (every
stage once, then every stage again) so a change in background load touches all stages alike; the median is
reported. Nothing downloads: tiktoken's files come from core.tokens (packaged), MiniLM from its package, and the
peers are given a tiktoken Encoding or "cl100k_base" by name (their defaults, "cl100k_base" strings for Chonkie
and "gpt2" for LangChain, would download).

Peers are benchmark-only extras: `bash scripts/setup.sh --bench` (requirements-bench.txt). A peer that is not
installed or fails is reported as skipped and the run goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from bench import run_cli, write_json
from core.infra.errors import ChunkLensError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chroma_eval"
FAMILIES = ("token", "recursive", "peers", "semantic")
TOKEN_SIZE, TOKEN_OVERLAP = 500, 100
#: token budget given to the recursive peers: our `recursive` caps at θ = 200 words, about 226 cl100k tokens per
#: chunk on chroma_eval (README), so 256 tokens asks the peers for chunks of the same order and no overlap.
RECURSIVE_TOKENS = 256
#: our semantic caps chunks at 500 tokens; Chonkie's SemanticChunker gets the same number (in MiniLM word pieces).
SEMANTIC_MAX_TOKENS = 500
BATCH_SIZE = 32
RSS_INTERVAL = 0.01
MEMORY_METHOD = (f"psutil RSS sampled every {RSS_INTERVAL * 1000:.0f} ms in a thread while a stage runs; peak RSS of "
                 "the whole process (model and text included), + growth over its RSS at the stage's start; the max "
                 "over repeats. One process runs every stage, so memory freed by earlier stages can be reused and hide "
                 "growth.")
INSTALL_HINT = "pip install -c requirements.txt -r requirements-bench.txt"
#: earlier reference figures (2-core machine; token / recursive on the five corpora joined, 1.44 MB; semantic on the
#: first 200,000 characters), printed beside ours for orientation.
REFERENCE_FIGURES = {
    "tiktoken cl100k encode": "22.2 MB/s",
    "langchain TokenTextSplitter": "17.9 MB/s",
    "chonkie RecursiveChunker": "15.8 MB/s",
    "chonkie TokenChunker": "10.4 MB/s",
    "langchain RecursiveCharacterTextSplitter": "2.8 MB/s",
    "MiniLM embed sentences": "10.6 s",
    "langchain-experimental SemanticChunker": "25.3 s",
    "chonkie SemanticChunker": "30.1 s",
}
#: the targets for our chunkers: (at most this many times the fastest peer's seconds or None, at most this
#: many times the floor's seconds)
TARGETS = {"naive-500t": (1.0, 1.5), "recursive": (1.0, 1.3), "cosine": (None, 1.3), "semantic": (None, 1.3),
           "cosine (int8)": (None, 0.75), "semantic (int8)": (None, 0.75),
           "cosine (onnx fp32)": (None, 1.0), "semantic (onnx fp32)": (None, 1.0)}
#: which library each of our re-implementations mirrors (stage names; a library stage that did not run is left
#: out): ours must take at most MIRROR_MAX times its seconds
MIRRORS: dict[str, tuple[str, ...]] = {
    # the same windows: `size` tokens of the whole text's cl100k tokens, a new one every size - overlap
    # (splitting.document_token_windows; the same chunks as TokenTextSplitter: tests/unit/test_snippets.py)
    "naive-500t": ("langchain TokenTextSplitter", "chonkie TokenChunker"),
    # the same recursion: split on paragraphs, lines, sentences, then words until a piece fits, and pack neighbouring
    # pieces back up to the cap: LangChain's and Chonkie's recursive splitters, at the same budget (RECURSIVE_TOKENS).
    # Not the registered langchain-recursive / chonkie-recursive: at their defaults (4000 / 2048 characters) they
    # stop at paragraphs where ours, at 200 words, goes on to sentences, so their time is not ours to match
    "recursive": ("langchain RecursiveCharacterTextSplitter", "chonkie RecursiveChunker"),
    # whole sentences packed up to a token budget: LlamaIndex's SentenceSplitter, at ours' budget and overlap
    "sentence": ("llamaindex-sentence:chunk_size=256:chunk_overlap=0",),
    # the percentile-breakpoint method over buffered sentence windows that LangChain's SemanticChunker popularised,
    # and LlamaIndex's SemanticSplitterNodeParser implements
    "semantic": ("langchain-experimental SemanticChunker", "llamaindex-semantic"),
    # a new chunk where a sentence's similarity to what comes before falls under a threshold: Chonkie's SemanticChunker
    "cosine": ("chonkie SemanticChunker", "chonkie-semantic"),
}
MIRROR_MAX = 1.0
#: registered peers timed once more at the sizes of the chunker of ours that mirrors them (MIRRORS), when registered
MATCHED_PEERS = ("llamaindex-sentence:chunk_size=256:chunk_overlap=0",)

Run = Callable[[], int]  # one timed pass; returns how many pieces (chunks, tokens, vectors) it produced
Prepare = Callable[[str], Run]  # untimed set-up on the stage's text


@dataclass
class Stage:
    name: str
    families: tuple[str, ...]
    role: str  # "floor", "ours" or "peer"
    prepare: Prepare
    unit: str = "chunks"
    semantic: bool = False  # runs on the first --semantic-chars characters


@dataclass
class Result:
    name: str
    families: tuple[str, ...]
    role: str
    chars: int
    mb: float
    unit: str
    runs: list[float] = field(default_factory=list)
    count: int = 0
    peak_rss_mb: float = 0.0
    rss_growth_mb: float = 0.0
    skipped: str = ""
    seconds: float | None = None
    mb_per_s: float | None = None
    x_fastest_peer: float | None = None
    x_floor: float | None = None
    reference_figure: str = ""


class RssPeak:
    """Peak resident memory while a block runs. tracemalloc would slow torch down and miss its allocations, and
    ru_maxrss only ever rises, so a thread samples the process's RSS instead."""

    def __init__(self, interval: float = RSS_INTERVAL) -> None:
        self.interval = interval
        self._proc = psutil.Process()
        self._stop = threading.Event()
        self.start = self.peak = 0

    def _rss(self) -> int:
        return self._proc.memory_info().rss

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> RssPeak:
        self.start = self.peak = self._rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS, so one stage's leftovers inflate the next one's baseline
    less (glibc only; elsewhere a no-op)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# --- stages -----------------------------------------------------------------------------------------------------


@lru_cache(maxsize=2)
def _sentences(text: str) -> tuple[str, ...]:
    """The sentences every embedding chunker starts from (core.text, pysbd); split once, outside the timing."""
    from core import text as T

    return tuple(text[s:e] for s, e in T.sentences(text))


def floor_stages(encoding: Any, model: Any) -> list[Stage]:
    def tiktoken_pass(text: str) -> Run:
        return lambda: len(encoding.encode_ordinary(text))

    def embed_pass(text: str) -> Run:
        sentences = list(_sentences(text))
        return lambda: len(model.encode(sentences, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False))

    return [
        Stage("tiktoken cl100k encode", ("token", "recursive", "peers"), "floor", tiktoken_pass, unit="tokens"),
        Stage("MiniLM embed sentences", ("semantic",), "floor", embed_pass, unit="vectors", semantic=True),
    ]


def chunk_with(spec: str, model: Any) -> Prepare:
    """A chunker through the registry on the stage's text, exactly as the app and `python -m core bench` build it
    (with `model` as its embedder), timed through `Chunker.run`."""

    def prepare(text: str) -> Run:
        from core.chunkers.base import ChunkerContext
        from core.chunkers.registry import make_chunker
        from core.schema.documents import Document

        chunker = make_chunker(spec, ChunkerContext(embedder=model))
        doc = Document("bench", "bench", text)
        return lambda: len(chunker.run(doc).chunks)

    return prepare


def our_stages(embedder: Any, int8: Any = None, onnx_fp32: Any = None) -> list[Stage]:
    """Ours through the registry, exactly as the app and `python -m core bench` build them; with `int8`
    (`bundled:minilm-int8`) and `onnx_fp32` (`bundled:minilm-fp32`, the default embedder), the embedding chunkers
    once more on each onnxruntime MiniLM, and each one's own sentence pass. `recursive`, `paragraph` and `sentence`
    are also in the peers family, beside the registered peers."""

    def embed_with(model: Any) -> Prepare:
        def prepare(text: str) -> Run:
            sentences = list(_sentences(text))
            return lambda: len(model.embed(sentences))

        return prepare

    return [
        Stage("naive-500t", ("token",), "ours",
              chunk_with(f"naive-500t:size={TOKEN_SIZE}:overlap={TOKEN_OVERLAP}", embedder)),
        Stage("recursive", ("recursive", "peers"), "ours", chunk_with("recursive", embedder)),
        Stage("paragraph", ("peers",), "ours", chunk_with("paragraph", embedder)),
        Stage("sentence", ("peers",), "ours", chunk_with("sentence", embedder)),
        Stage("cosine", ("semantic",), "ours", chunk_with("cosine", embedder), semantic=True),
        Stage("semantic", ("semantic",), "ours", chunk_with("semantic", embedder), semantic=True),
        *([] if int8 is None else [
            Stage("int8 MiniLM embed sentences", ("semantic",), "ours", embed_with(int8), unit="vectors",
                  semantic=True),
            Stage("cosine (int8)", ("semantic",), "ours", chunk_with("cosine", int8), semantic=True),
            Stage("semantic (int8)", ("semantic",), "ours", chunk_with("semantic", int8), semantic=True),
        ]),
        *([] if onnx_fp32 is None else [
            Stage("onnx fp32 MiniLM embed sentences", ("semantic",), "ours", embed_with(onnx_fp32), unit="vectors",
                  semantic=True),
            Stage("cosine (onnx fp32)", ("semantic",), "ours", chunk_with("cosine", onnx_fp32), semantic=True),
            Stage("semantic (onnx fp32)", ("semantic",), "ours", chunk_with("semantic", onnx_fp32), semantic=True),
        ]),
    ]


def registered_peer_stages(embedder: Any) -> list[Stage]:
    """Every registered peer chunker at its library's defaults, through the registry as the app runs it (and the
    MATCHED_PEERS at ours' sizes): in the peers family, or the semantic one (on the semantic text, with our
    embedder) for a peer that embeds."""
    from core.chunkers.peers import PeerChunker
    from core.chunkers.registry import REGISTRY, make_chunker

    names = sorted(n for n, cls in REGISTRY.items() if issubclass(cls, PeerChunker))
    stages = []
    for spec in [*names, *(s for s in MATCHED_PEERS if s.split(":")[0] in names)]:
        embeds = "embedder" in make_chunker(spec).needs
        stages.append(Stage(spec, ("semantic",) if embeds else ("peers",), "peer", chunk_with(spec, embedder),
                            semantic=embeds))
    return stages


def chonkie_stages(encoding: Any, model: Any) -> list[Stage]:
    """Chonkie gets the tiktoken Encoding object itself and the loaded model: by name both would download."""

    def token(text: str) -> Run:
        from chonkie import TokenChunker

        chunker = TokenChunker(tokenizer=encoding, chunk_size=TOKEN_SIZE, chunk_overlap=TOKEN_OVERLAP)
        return lambda: len(chunker.chunk(text))

    def recursive(text: str) -> Run:
        from chonkie import RecursiveChunker

        chunker = RecursiveChunker(tokenizer=encoding, chunk_size=RECURSIVE_TOKENS)
        return lambda: len(chunker.chunk(text))

    def semantic(text: str) -> Run:
        from chonkie import SemanticChunker, SentenceTransformerEmbeddings

        chunker = SemanticChunker(embedding_model=SentenceTransformerEmbeddings(model), chunk_size=SEMANTIC_MAX_TOKENS)
        return lambda: len(chunker.chunk(text))

    return [
        Stage("chonkie TokenChunker", ("token",), "peer", token),
        Stage("chonkie RecursiveChunker", ("recursive",), "peer", recursive),
        Stage("chonkie SemanticChunker", ("semantic",), "peer", semantic, semantic=True),
    ]


def langchain_stages(model: Any) -> list[Stage]:
    """LangChain's splitters with encoding_name="cl100k_base" (their default "gpt2" is not packaged)."""

    def token(text: str) -> Run:
        from langchain_text_splitters import TokenTextSplitter

        splitter = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=TOKEN_SIZE, chunk_overlap=TOKEN_OVERLAP)
        return lambda: len(splitter.split_text(text))

    def recursive(text: str) -> Run:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=RECURSIVE_TOKENS, chunk_overlap=0)
        return lambda: len(splitter.split_text(text))

    def semantic(text: str) -> Run:
        from langchain_experimental.text_splitter import SemanticChunker

        from bench.adapters import SharedModelEmbeddings

        splitter = SemanticChunker(SharedModelEmbeddings(model, batch_size=BATCH_SIZE))
        return lambda: len(splitter.split_text(text))

    return [
        Stage("langchain TokenTextSplitter", ("token",), "peer", token),
        Stage("langchain RecursiveCharacterTextSplitter", ("recursive",), "peer", recursive),
        Stage("langchain-experimental SemanticChunker", ("semantic",), "peer", semantic, semantic=True),
    ]


# --- running ----------------------------------------------------------------------------------------------------


def _skip_reason(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError):
        return f"skipped: {(exc.name or 'a module').split('.')[0]} is not installed ({INSTALL_HINT})"
    first_line = (str(exc).strip().splitlines() or [""])[0][:160]
    return f"skipped: {type(exc).__name__}: {first_line}"


def run_once(stage: Stage, text: str, result: Result) -> None:
    """Set the stage up, then time one pass and record its seconds and memory (or why it was skipped)."""
    from core import text as T
    from core.tokens import clear_token_maps

    try:
        run = stage.prepare(text)
        T.clear_caches()  # every run splits, indexes and tokenises its text afresh, as a chunker's first call does
        clear_token_maps()
        release_memory()
        with RssPeak() as rss:
            t0 = time.perf_counter()
            count = run()
            seconds = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - a peer may fail in any way; the run reports it and goes on
        result.skipped = _skip_reason(exc)
        return
    result.runs.append(seconds)
    result.count = count
    result.peak_rss_mb = max(result.peak_rss_mb, rss.peak / 2**20)
    result.rss_growth_mb = max(result.rss_growth_mb, (rss.peak - rss.start) / 2**20)


def run_stages(stages: Sequence[Stage], text: str, semantic_text: str, repeat: int) -> list[Result]:
    """Every stage once per round, `repeat` rounds; progress on stderr."""
    results = []
    for s in stages:
        t = semantic_text if s.semantic else text
        results.append(Result(s.name, s.families, s.role, len(t), len(t.encode("utf-8")) / 1e6, s.unit,
                              reference_figure=REFERENCE_FIGURES.get(s.name, "")))
    for round_no in range(1, repeat + 1):
        for stage, result in zip(stages, results):
            if result.skipped:
                continue
            run_once(stage, semantic_text if stage.semantic else text, result)
            done = result.skipped or f"{result.runs[-1]:.3f} s"
            print(f"[{round_no}/{repeat}] {stage.name}: {done}", file=sys.stderr, flush=True)
    return results


def add_ratios(results: list[Result]) -> None:
    """Median seconds, MB/s, and seconds as a multiple of the family's fastest peer and of its floor."""
    for r in results:
        if r.runs:
            r.seconds = statistics.median(r.runs)
            r.mb_per_s = r.mb / r.seconds if r.seconds > 0 else None
    for family in FAMILIES:
        members = [(r, r.seconds) for r in results if family in r.families and r.seconds]
        peers = [seconds for r, seconds in members if r.role == "peer"]
        floors = [seconds for r, seconds in members if r.role == "floor"]
        for r, seconds in members:
            if r.role == "floor" or r.families[0] != family:  # a stage's ratios are its first family's
                continue
            r.x_fastest_peer = seconds / min(peers) if peers else None
            r.x_floor = seconds / floors[0] if floors else None


def target_lines(results: list[Result]) -> list[str]:
    """The targets, met or missed, for each of our chunkers that ran."""
    lines = []
    for r in results:
        if r.role != "ours" or r.name not in TARGETS:
            continue
        peer_max, floor_max = TARGETS[r.name]
        checks = []
        if peer_max is not None:
            checks.append(_check(r.x_fastest_peer, peer_max, f"the fastest {r.families[0]} peer"))
        floor_name = "one tiktoken pass" if r.families[0] != "semantic" else "embedding each sentence once"
        checks.append(_check(r.x_floor, floor_max, floor_name))
        lines.append(f"  {r.name:<11} " + "; ".join(checks))
    return lines + mirror_lines(results)


def mirror_lines(results: list[Result]) -> list[str]:
    """Each of ours against every library it mirrors that ran (`MIRRORS`): at most MIRROR_MAX times its seconds."""
    by_name = {r.name: r for r in results if r.seconds}
    lines = []
    for ours, libraries in MIRRORS.items():
        mine = by_name.get(ours)
        if mine is None or mine.role != "ours":
            continue
        for library in libraries:
            theirs = by_name.get(library)
            if theirs is not None and theirs.seconds and mine.seconds:
                lines.append(f"  {ours:<11} " + _check(mine.seconds / theirs.seconds, MIRROR_MAX,
                                                        f"{library}, which it mirrors"))
    return lines


def _check(value: float | None, limit: float, what: str) -> str:
    if value is None:
        return f"x {what}: n/a (target <= {limit:.2f})"
    verdict = "met" if value <= limit else "MISSED"
    return f"{value:.3f}x {what} (target <= {limit:.2f}: {verdict})"


# --- output -----------------------------------------------------------------------------------------------------


def _fmt(value: float | None, pattern: str) -> str:
    return "" if value is None else pattern.format(value)


def table_rows(results: list[Result]) -> list[list[str]]:
    rows = []
    for family in FAMILIES:
        members = [r for r in results if family in r.families]
        members.sort(key=lambda r: ("floor", "ours", "peer").index(r.role))
        for r in members:
            if r.skipped:
                rows.append([family, r.role, r.name, f"{r.chars:,}", "", r.skipped, "", "", "", "", r.reference_figure])
                continue
            rows.append([
                family, r.role, r.name, f"{r.chars:,}", f"{r.count:,} {r.unit}", _fmt(r.seconds, "{:.3g}"),
                _fmt(r.mb_per_s, "{:.3g}"), _fmt(r.x_fastest_peer, "{:.2f}x"),
                "floor" if r.role == "floor" else _fmt(r.x_floor, "{:.2f}x"),
                f"{r.peak_rss_mb:,.0f} (+{r.rss_growth_mb:,.0f})", r.reference_figure,
            ])
    return rows


def render_table(results: list[Result]) -> str:
    header = ["family", "role", "stage", "chars", "output", "s (median)", "MB/s", "x fastest peer", "x floor",
              "peak RSS MB (+growth)", "reference"]
    rows = table_rows(results)
    skipped_col = 5
    sized = [header, *(row for row in rows if not row[skipped_col].startswith("skipped"))]
    widths = [max(len(row[i]) for row in sized) for i in range(len(header))]

    def line(row: list[str]) -> str:
        if row[skipped_col].startswith("skipped"):  # let the reason run over the figure columns
            return "  ".join(c.ljust(w) for c, w in zip(row[:skipped_col], widths)) + "  " + row[skipped_col]
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    return "\n".join(out)


def machine() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    from core.chunkers.peers import PEER_LIBRARIES

    dists = tuple(dict.fromkeys(("torch", "sentence-transformers", "tiktoken", "chonkie", "langchain-text-splitters",
                                 "langchain-experimental", *PEER_LIBRARIES)))
    return {
        "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {d: version(d) for d in dists},
    }


def report_text(report: dict[str, Any], results: list[Result]) -> str:
    inp, m = report["input"], report["machine"]
    head = [
        f"chunking speed: {inp['chars']:,} characters ({inp['mb']:.3f} MB UTF-8) of {inp['data']}; embedding "
        f"chunkers on the first {inp['semantic_chars']:,}; median of {report['repeat']} run(s)",
        f"machine: {m['cpu_count']} CPUs, load {m['load_average_at_start']}, Python {m['python']}, "
        f"torch {m['versions']['torch']}",
        "x fastest peer / x floor: this stage's seconds divided by the family's fastest peer's / by its floor's "
        "(lower is better)",
        f"memory: {MEMORY_METHOD}",
        "reference: an earlier measurement for orientation (2-core machine, token / recursive on 1.44 MB, "
        "semantic on 200,000 characters)",
        "",
    ]
    return "\n".join([*head, render_table(results), "", "targets", *target_lines(results)])


# --- entry point ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="qa-spans v1 folder; its documents are joined")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per stage; the median is reported")
    parser.add_argument("--semantic-chars", type=int, default=200_000,
                        help="embedding chunkers and the embedding floor run on this many first characters")
    parser.add_argument("--chars", type=int, default=None, help="use only the first N characters (quick runs)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="only these families' stages, e.g. token,recursive (the semantic family takes minutes)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON here")
    return parser


def load_text(folder: Path, chars: int | None) -> tuple[str, int]:
    """The folder's documents joined into one stream (what the papers chunk), cut to `chars`."""
    from core.ingest.datasets import load_dataset
    from core.ingest.documents import join_documents

    docs = load_dataset(folder).documents
    text = join_documents(docs).text
    return (text[:chars] if chars else text), len(docs)


def load_services() -> tuple[Any, Any, Any, Any]:
    """tiktoken's cl100k from the packaged files (this also points tiktoken's cache at them, for the peers that
    load it by name), the bundled MiniLM on torch without a vector cache and its onnxruntime twins in int8 and fp32
    (None when they cannot be built); all warmed up, so no stage pays for that."""
    from core import text as T
    from core.store.embeddings import SentenceTransformerEmbedder
    from core.tokens import TokenMap, get_encoding

    encoding = get_encoding("cl100k_base")
    embedder = SentenceTransformerEmbedder(batch_size=BATCH_SIZE)
    embedder.embed(["Warm the model up.", "Twice."])
    from core.store.onnx_embedder import OnnxMiniLMEmbedder

    twins: list[Any] = []
    for precision in ("int8", "fp32"):
        try:
            twin: Any = OnnxMiniLMEmbedder(batch_size=BATCH_SIZE, precision=precision)
            twin.embed([f"Warm the {precision} model up with sentence {i}." for i in range(2 * BATCH_SIZE)])
        except ChunkLensError as exc:
            print(f"skipped the onnxruntime {precision} stages: {exc}", file=sys.stderr)
            twin = None
        twins.append(twin)
    warm = "Warm the sentence splitters up. Twice. And the per-process tables."
    T.sentences(warm)
    T.separator_sentences(warm)
    T.word_index(warm)
    TokenMap(warm)  # builds the vocabulary's byte lengths, once per process
    return encoding, embedder, twins[0], twins[1]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, write --json; returns the report."""
    args = build_parser().parse_args(argv)
    if args.repeat < 1 or args.semantic_chars < 1 or (args.chars is not None and args.chars < 1):
        raise ChunkLensError("--repeat, --semantic-chars and --chars must be at least 1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    host = machine()
    text, n_docs = load_text(args.data, args.chars)
    semantic_text = text[: args.semantic_chars]
    encoding, embedder, int8, onnx_fp32 = load_services()
    stages = [*floor_stages(encoding, embedder.model), *our_stages(embedder, int8, onnx_fp32),
              *chonkie_stages(encoding, embedder.model), *langchain_stages(embedder.model),
              *registered_peer_stages(embedder)]
    wanted = set(args.families.split(","))
    stages = [s for s in stages if wanted & set(s.families)]
    results = run_stages(stages, text, semantic_text, args.repeat)
    add_ratios(results)
    report = {
        "input": {"data": str(args.data), "documents": n_docs, "chars": len(text),
                  "mb": len(text.encode("utf-8")) / 1e6, "semantic_chars": len(semantic_text)},
        "repeat": args.repeat,
        "machine": host,
        "memory_method": MEMORY_METHOD,
        "stages": [asdict(r) for r in results],
        "targets": [t.strip() for t in target_lines(results)],
    }
    print(report_text(report, results))
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    sys.exit(run_cli(main))
