"""Document(s) + chunker + embedder -> chunks -> vectors -> Chroma collection, with progress and caching.

The app and the command line both go through these two steps, so what one shows the other measures. What each
step leaves is a noun of `core.schema.runs`: `chunk_documents` makes a `ChunkedRun`, `index_run` an `IndexedRun`.
Chunk runs are cached on disk by (documents as chunked: their text, title, source, pages, outline and every other
field a chunker may read, `document_key`; chunker identity: the parameters that shape the chunks and the embedder
or LLM the chunker uses); collections by (the same documents, chunker identity, embedder); vectors by
(embedder, text); LLM answers by (backend, request). A rerun with the same inputs recomputes nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core.chunkers.base import Chunker
from core.infra.jsonio import JsonObject
from core.infra.storage import write_atomically
from core.schema.chunks import Chunk, SpanMismatch, check_spans
from core.schema.documents import Document
from core.schema.runs import ChunkedRun, IndexedRun
from core.store.embeddings import Embedder
from core.store.index import VectorStore, collection_name
from core.store.lexical import LexicalStore, lexical_name

ProgressFn = Callable[[str, int, int], None]  # (stage, done, total)


#: `Document` fields that no key holds, each with why. Every other field is keyed (`document_key`): a field added to
#: `Document` is keyed until a line here says why it need not be (tests/unit/test_run_keys.py checks both ways).
UNKEYED_FIELDS: dict[str, str] = {
    "notes": "what loading told the user (a guessed encoding, an unreadable page): no chunker, index, retrieval "
             "policy, export or metric reads it",
}


def document_key(doc: Document) -> str:
    """A digest of the document as chunked, indexed and scored: its text and every other field of `Document` but
    `UNKEYED_FIELDS`. Chunkers read more than the text: `prefix=title|headings` the title and the outline, CHOP's
    tags the title and the file name (`source`), routing the title, export the title and the page starts, CHOP's
    report fields the gold tags (`cnm`, and each segment's). Keyed by the text alone, a library holding a text
    under one title was served the chunks, tags and scores another library had made of it under another title.

    Derived from the dataclass's fields rather than listed, so a new field cannot be forgotten; values are compared
    as JSON, so an outline read back from disk (lists) keys as the one just parsed (tuples)."""
    h = hashlib.sha256()
    for f in dataclasses.fields(Document):
        if f.name in UNKEYED_FIELDS:
            continue
        value = getattr(doc, f.name)
        data = f"s{value}" if isinstance(value, str) else \
            "j" + json.dumps(value, default=_plain, sort_keys=True, ensure_ascii=False)
        raw = data.encode("utf-8", "surrogatepass")
        h.update(f"{f.name}\x00{len(raw)}\x00".encode())
        h.update(raw)
    return h.hexdigest()


def _plain(value: object) -> dict[str, object]:
    """A nested dataclass (a stream's `Segment`) as JSON takes it; anything else JSON cannot take is an error,
    never keyed by its `repr`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"a document field holds a {type(value).__name__}, which no key can name")


def corpus_fingerprint(docs: Sequence[Document]) -> str:
    """The documents as chunked, in order (`document_key`): what chunk runs, collections, the bench memo and the
    app's session runs are keyed by."""
    h = hashlib.sha256()
    for d in docs:
        h.update(f"{d.doc_id}\x00{document_key(d)}\x00".encode())
    return h.hexdigest()[:24]


def run_key(docs: Sequence[Document], identity: str) -> str:
    """The name of a chunk run over `docs` by the chunker with this identity: its cache file's stem, and the key
    its hand edits are kept under."""
    return hashlib.sha256(f"{corpus_fingerprint(docs)}|{identity}".encode()).hexdigest()[:32]


def text_only_run_key(docs: Sequence[Document], identity: str) -> str:
    """The name `run_key` gave a run before it keyed every field a chunker reads: doc ids and texts only. Never a
    cache key (it is the one another library's title poisoned); only where a library's hand edits were saved
    before, so that they are found again (`core.workbench.runs.edits_key`)."""
    h = hashlib.sha256()
    for d in docs:
        h.update(f"{d.doc_id}\x00{d.fingerprint}\x00".encode())
    return hashlib.sha256(f"{h.hexdigest()[:24]}|{identity}".encode()).hexdigest()[:32]


def load_chunk_run(docs: Sequence[Document], chunker: Chunker, cache_dir: Path) -> ChunkedRun | None:
    """The cached run of `chunker` over `docs`, or None when there is none (a damaged entry is deleted)."""
    started = time.perf_counter()
    cache_file = cache_dir / f"{run_key(docs, chunker.identity)}.json"
    if not cache_file.exists():
        return None
    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
        chunks = [Chunk(**{k: v for k, v in c.items() if k != "chunk_id"}) for c in data["chunks"]]
        check_spans(chunks, docs)
        return ChunkedRun(chunker.spec, chunker.identity, chunks, data["traces"], time.perf_counter() - started, True,
                        chunker)
    except (ValueError, KeyError, TypeError, RecursionError, SpanMismatch):
        cache_file.unlink(missing_ok=True)  # a damaged or stale cache entry is recomputed, never trusted
        return None


def chunk_documents(docs: Sequence[Document], chunker: Chunker, cache_dir: Path | None = None,
                    progress: ProgressFn | None = None) -> ChunkedRun:
    """Chunk every document (or load the same run from the cache)."""
    started = time.perf_counter()
    chunker.prepare(docs)  # also for a cached run: a retrieval policy may tag questions with what it learned
    cache_file = cache_dir / f"{run_key(docs, chunker.identity)}.json" if cache_dir else None
    if cache_dir is not None and (cached := load_chunk_run(docs, chunker, cache_dir)) is not None:
        return cached
    chunks: list[Chunk] = []
    traces: dict[str, JsonObject] = {}
    for i, doc in enumerate(docs):
        chunker.context.check_stop()  # a stopped run caches nothing
        result = chunker.run(doc)
        chunks.extend(result.chunks)
        if result.trace:
            traces[doc.doc_id] = result.trace
        if progress:
            progress(f"chunk {chunker.name}", i + 1, len(docs))
    check_spans(chunks, docs)  # a chunker that breaks the span contract fails here, before anything is cached
    run = ChunkedRun(chunker.spec, chunker.identity, chunks, traces, time.perf_counter() - started, chunker=chunker)
    if cache_file:
        # a temporary name of its own: sessions caching the same run at once never share (or tear) one file
        write_atomically(cache_file, json.dumps({"chunks": [c.to_dict() for c in chunks], "traces": traces}))
    return run


def index_run(run: ChunkedRun, docs: Sequence[Document], embedder: Embedder, store: VectorStore,
              progress: ProgressFn | None = None, lexical: LexicalStore | None = None) -> IndexedRun:
    """Embed a chunk run and store it, or reuse the complete collection already built from the same inputs;
    with a lexical store, also build (or reuse) the run's BM25 index over exactly the embedded texts."""
    indexed = _dense_index(run, docs, embedder, store, progress)
    indexed.texts = {d.doc_id: d.text for d in docs}
    if lexical is not None:
        t0 = time.perf_counter()
        indexed.lexical, indexed.lexical_built = lexical.get(lexical_name(indexed.collection), run.index_units())
        indexed.lexical_seconds = time.perf_counter() - t0
    return indexed


def _dense_index(run: ChunkedRun, docs: Sequence[Document], embedder: Embedder, store: VectorStore,
                 progress: ProgressFn | None) -> IndexedRun:
    corpus = corpus_fingerprint(docs)
    name = collection_name(corpus, run.identity, embedder.key)
    units = run.index_units()
    if store.has_complete(name, len(units)):
        return IndexedRun(run, name, 0.0, 0.0, True, 0)
    texts = [c.embed_text for c in units]
    t0 = time.perf_counter()
    computed_before = _computed(embedder)
    vectors = embedder.embed(texts, (lambda d, n: progress(f"embed {run.spec}", d, n)) if progress else None)
    computed_after = _computed(embedder)
    computed = len(texts) if computed_before is None or computed_after is None else computed_after - computed_before
    t1 = time.perf_counter()
    description = {"chunker": run.identity[:500], "embedder": embedder.key[:500], "corpus": corpus}
    store.build(name, units, vectors, description,
                (lambda d, n: progress(f"index {run.spec}", d, n)) if progress else None,
                (run.chunker or Chunker).store_metadata)  # a run made by hand has none: no metadata
    return IndexedRun(run, name, t1 - t0, time.perf_counter() - t1, False, len(texts), computed)


def _computed(embedder: Embedder) -> int | None:
    """Vectors a caching embedder has computed so far; None for an embedder without a cache."""
    stats = getattr(embedder, "stats", None)
    return stats.computed if stats is not None else None
