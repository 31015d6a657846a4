"""The chunk model, the chunker interface and the registry every chunker is reached through.

A chunk is always an exact span of its document: `doc.text[chunk.start:chunk.end] == chunk.text`. What a method
adds (CHOP's prefix, LGMGC's parent link, a chunker's diagnostics) lives beside the span, never inside it.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from core.chunkers.splitting import document_token_windows
from core.errors import ChunkLensError, ConfigError
from core.ingest.documents import Document
from core.tokens import prefetch_token_map, token_map

if TYPE_CHECKING:
    from core.llm.base import LLMClient
    from core.methods.chop.cnm import CnmBackend
    from core.methods.lgmgc.scoring import NextTokenScorer
    from core.pipeline import ChunkRun
    from core.store.embeddings import Embedder
    from core.store.retrieval import RetrievalPolicy

StoreValue = str | int | float | bool


@dataclass
class Chunk:
    doc_id: str
    start: int
    end: int
    text: str
    token_count: int
    index: int = 0
    prefix: str = ""
    prefix_place: Literal["before", "after"] = "before"
    parent_id: str | None = None
    child: str = ""  # for a multi-granular child: its label inside the parent ("h0", "q3"); "" otherwise
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}#{self.index}" + (f".{self.child}" if self.child else "")

    @property
    def embed_text(self) -> str:
        """What is embedded and stored: the span, with the prefix before or after it when there is one."""
        if not self.prefix:
            return self.text
        return f"{self.prefix}\n{self.text}" if self.prefix_place == "before" else f"{self.text}\n{self.prefix}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"chunk_id": self.chunk_id}


class SpanMismatch(ChunkLensError):
    """A chunk whose text is not its document's slice (a chunker bug, or a cache that no longer fits)."""


def check_spans(chunks: Sequence[Chunk], docs: Sequence[Document]) -> None:
    """Hold every chunk to the contract: a known document, 0 <= start <= end <= len(text), and
    `text == doc.text[start:end]`. Raises SpanMismatch naming the first chunk that breaks it."""
    by_id = {d.doc_id: d for d in docs}
    for c in chunks:
        doc = by_id.get(c.doc_id)
        if doc is None:
            raise SpanMismatch(f"chunk {c.chunk_id} names a document that is not there")
        if not 0 <= c.start <= c.end <= len(doc.text) or doc.text[c.start:c.end] != c.text:
            raise SpanMismatch(f"chunk {c.chunk_id} ({c.start}-{c.end}) is not its document's text there")


@dataclass
class Chunking:
    """A chunker's output for one document: the chunks plus a JSON-safe trace of how it decided (for the app)."""

    chunks: list[Chunk]
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChunkerContext:
    """The services a chunker names in `needs`, built once per run by `core.services.build_services`."""

    embedder: Embedder | None = None
    llm: CnmBackend | None = None  # CHOP's CNM backend (core.methods.chop.backends)
    scorer: NextTokenScorer | None = None  # next-token scorer of a local causal LM (LGMGC)
    chat: LLMClient | None = None  # a chat client, for LumberChunker


#: what each ChunkerContext field is, as an error message names it
NEED_NAMES = {"embedder": "an embedder", "llm": "a CNM backend (an LLM)", "scorer": "a next-token scorer",
              "chat": "a chat LLM"}


class Chunker(ABC):
    """Subclasses are dataclasses of their parameters and register themselves under `name`. Callers chunk through
    `run`, which adds what the base class offers every chunker (the metadata prefix of `MetadataPrefix`).

    Besides `chunk`, a method reaches generic code only through these hooks, each with a default that does
    nothing: `validate` (parameters checked together), `retrieval_policy` (tag-aware search, read by
    `core.store.retrieval`), `store_metadata` (fields the vector store keeps beside each chunk), report fields
    (`register_report_fields`, added to every bench report) and the `kind` of its `Chunking.trace` (the app
    draws the kinds it knows: "similarity", "distance", "eos", "continuity"). A chunker that mixes in
    `TitleRouting` takes `retrieval=route` (title routing, `core.store.routing`) with nothing of its own to write."""

    name: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    #: bumped when the algorithm changes what it returns for the same parameters, so caches built by the old
    #: code (chunk runs, collections) are not taken for the new one's
    version: ClassVar[int] = 1

    def __post_init__(self) -> None:
        self.context = ChunkerContext()

    @abstractmethod
    def chunk(self, doc: Document) -> Chunking: ...

    def validate(self) -> None:
        """Check the parameters together; a ConfigError names the problem. `make_chunker` calls it."""
        return None

    def prepare(self, docs: Sequence[Document]) -> None:
        """Called once with the whole library before its documents are chunked (and before a cached run is
        loaded), for a method that learns from the library as a whole (CHOP's `extract` backend)."""
        return None

    def retrieval_policy(self, titles: Mapping[str, str] | None = None) -> RetrievalPolicy | None:
        """The tag-aware search this chunker's runs are searched with (CHOP's CNM filter or boost, title routing),
        or None. `titles` are the searched documents' titles by doc_id, from whoever holds the documents (the
        bench, a workbench run): title routing reads them, the chunks do not carry them."""
        if isinstance(self, TitleRouting) and self.retrieval == "route":
            from core.store.routing import TitleRoute

            return TitleRoute(titles)
        return None

    @staticmethod
    def store_metadata(chunk: Chunk) -> dict[str, StoreValue]:
        """Fields the vector store keeps beside `chunk`, for a retrieval policy to filter on."""
        return {}

    def run(self, doc: Document) -> Chunking:
        """`chunk`, then the contextual header when the chunker carries `prefix=title|headings`. The document's
        token pass starts first on a worker thread: every chunker counts its chunks' tokens from it, and most
        split the text in Python meanwhile."""
        prefetch_token_map(doc.text)
        result = self.chunk(doc)
        if isinstance(self, MetadataPrefix) and self.prefix != "none":
            from core.chunkers.headers import header_texts

            for chunk, header in zip(result.chunks, header_texts(doc, [c.start for c in result.chunks],
                                                                  self.prefix)):
                chunk.prefix, chunk.prefix_place = header, "before"
                chunk.meta["prefix_kind"] = self.prefix
        return result

    def params(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        if isinstance(self, MetadataPrefix) and out.get("prefix") == "none":
            del out["prefix"]  # the default leaves spec and identity as they were before the parameter existed
        if isinstance(self, TitleRouting) and out.get("retrieval") == "off":
            del out["retrieval"]  # likewise: `naive-500t` stays `naive-500t`
        return out

    @property
    def spec(self) -> str:
        """Canonical name with every parameter, e.g. `recursive:theta=200`; it keys caches and collections."""
        parts = [self.name] + [f"{k}={v}" for k, v in sorted(self.params().items())]
        return ":".join(parts)

    #: parameters that only steer retrieval, not the chunks (left out of `identity`)
    retrieval_params: ClassVar[tuple[str, ...]] = ()

    @property
    def identity(self) -> str:
        """Everything the chunks depend on: the parameters that shape them and the services used to make them.
        Chunk caches and Chroma collections are keyed by it."""
        params = {k: v for k, v in self.params().items() if k not in self.retrieval_params}
        parts = [self.name] + ([f"v{self.version}"] if self.version > 1 else [])
        parts += [f"{k}={v}" for k, v in sorted(params.items())]
        for need in self.needs:
            service = getattr(self.context, need, None)
            parts.append(f"{need}={getattr(service, 'key', type(service).__name__)}")
        return ":".join(parts)


@dataclass
class MetadataPrefix:
    """Mixin for chunkers that can carry a contextual header: `prefix=title|headings` (core.chunkers.headers)."""

    prefix: str = "none"

    def check_prefix(self) -> None:
        from core.chunkers.headers import PREFIX_MODES

        if self.prefix not in PREFIX_MODES:
            raise ConfigError(f"prefix must be one of {', '.join(PREFIX_MODES)} (got '{self.prefix}')")


#: the values of `TitleRouting.retrieval`
ROUTING_MODES = ("off", "route")


@dataclass
class TitleRouting:
    """Mixin for chunkers whose runs can be searched by title routing: `retrieval=route` searches only the chunks
    of the document whose title the question names (`core.store.routing`), the metadata baseline beside CHOP's
    CNM filter. It steers retrieval only: left out of `identity` (the chunks and their caches are the plain
    chunker's), and out of the spec at its default, `off`."""

    retrieval: str = "off"
    retrieval_params: ClassVar[tuple[str, ...]] = ("retrieval",)

    def check_retrieval(self) -> None:
        if self.retrieval not in ROUTING_MODES:
            raise ConfigError(f"retrieval must be one of {', '.join(ROUTING_MODES)} (got '{self.retrieval}'; "
                              "filter and boost are chop's)")


REGISTRY: dict[str, type[Chunker]] = {}


def register(cls: type[Chunker]) -> type[Chunker]:
    """Class decorator: make the chunker reachable as `cls.name`; a name already taken is refused."""
    held = REGISTRY.get(cls.name)
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ConfigError(f"a chunker named '{cls.name}' is already registered ({held.__module__}.{held.__qualname__})")
    REGISTRY[cls.name] = cls
    return cls


def chunker_class(spec: str) -> type[Chunker]:
    """The registered class of a spec's chunker."""
    _load_builtin()
    name = parse_spec(spec)[0]
    if name not in REGISTRY:
        raise ConfigError(f"unknown chunker '{name}' (available: {', '.join(sorted(REGISTRY))})")
    return REGISTRY[name]


#: report_fields(documents, run) -> extra fields of one chunker's result in a bench report
ReportFields = Callable[[Sequence[Document], "ChunkRun"], dict[str, Any]]
REPORT_FIELDS: list[ReportFields] = []


def register_report_fields(fn: ReportFields) -> ReportFields:
    """Decorator for a method's report fields. Every bench result carries them, for every chunker (None or 0 where
    they do not apply), so the report's keys do not depend on which chunkers ran."""
    if fn not in REPORT_FIELDS:
        REPORT_FIELDS.append(fn)
    return fn


def report_fields(docs: Sequence[Document], run: ChunkRun) -> dict[str, Any]:
    """Every registered method's report fields for one chunk run."""
    _load_builtin()
    out: dict[str, Any] = {}
    for fn in REPORT_FIELDS:
        out.update(fn(docs, run))
    return out


def available() -> list[str]:
    _load_builtin()
    return sorted(REGISTRY)


def _load_builtin() -> None:
    import core.chunkers  # noqa: F401  (registers the generic chunkers)
    import core.methods  # noqa: F401  (and the papers' methods)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name:key=value:key=value` -> (name, {key: value})."""
    name, *pairs = [p.strip() for p in spec.strip().split(":")]
    params: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"chunker '{spec}': parameter '{pair}' must look like key=value")
        key, value = pair.split("=", 1)
        params[key.strip()] = value.strip()
    return name, params


def _convert(value: str, kind: Any, where: str) -> Any:
    text = str(kind)
    if value.lower() in ("none", "null", "off") and "None" in text:
        return None
    try:
        if "bool" in text:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "int" in text:
            return int(value)
        if "float" in text:
            return float(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: '{value}' is not a valid {text}") from exc
    return value


def make_chunker(spec: str, context: ChunkerContext | None = None) -> Chunker:
    """Build a chunker from its spec string, checking names, parameter types and values. With a context, the
    services the chunker needs must be in it; without one, the chunker can be inspected (spec, needs,
    parameters) but not run, which is how callers check specs before building any service."""
    cls = chunker_class(spec)
    name, raw = parse_spec(spec)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields:
            raise ConfigError(f"chunker '{name}' has no parameter '{key}' (has: {', '.join(fields) or 'none'})")
        kwargs[key] = _convert(value, fields[key].type, f"{name}:{key}")
    chunker = cls(**kwargs)
    chunker.context = context or ChunkerContext()
    for need in chunker.needs if context is not None else ():
        if getattr(chunker.context, need) is None:
            raise ConfigError(f"chunker '{name}' needs {NEED_NAMES.get(need, need)}, and none is configured")
    if isinstance(chunker, MetadataPrefix):
        chunker.check_prefix()
    if isinstance(chunker, TitleRouting):
        chunker.check_retrieval()
    chunker.validate()
    return chunker


def build_chunks(doc: Document, spans: Sequence[tuple[int, int]], token_counts: Sequence[int] | None = None,
                 **meta: Any) -> list[Chunk]:
    """Chunks for `spans` of `doc`, numbered in order. Token counts are tiktoken's on each span's text (taken
    from the document's one pass, `TokenMap.span_counts`), unless the chunker measured them itself
    (`token_counts`, e.g. a token window's size)."""
    texts = [doc.text[s:e] for s, e in spans]
    counts = token_map(doc.text).span_counts(spans) if token_counts is None else token_counts
    return [Chunk(doc.doc_id, s, e, text, n, index=i, meta=dict(meta))
            for i, ((s, e), text, n) in enumerate(zip(spans, texts, counts, strict=True))]


def token_window_chunks(doc: Document, size: int, overlap: int) -> list[Chunk]:
    """Naive-500T's windows of `doc` as chunks; `token_count` is the window's tokens (see document_token_windows)."""
    windows = document_token_windows(doc.text, 0, len(doc.text), size, overlap)
    return build_chunks(doc, [(s, e) for s, e, _ in windows], [n for _, _, n in windows])
