"""The chunker interface: the base class every chunker derives from, the services a run hands it (by need), the
mixins for contextual headers and title routing, and helpers that turn spans into chunks.

The chunk model is `core.schema.chunks`'s, the registry `core.chunkers.registry`'s.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from core.chunkers.headers import PREFIX_MODES, PrefixMode
from core.chunkers.splitting import document_token_windows
from core.infra.errors import ConfigError, Stopped
from core.infra.jsonio import JsonValue
from core.infra.stopping import STOPPED, stopping
from core.schema.chunks import Chunk, Chunking, RetrievalPolicy, StoreValue
from core.schema.documents import Document
from core.tokens import prefetch_token_map, token_map

if TYPE_CHECKING:
    from core.llm.base import LLMClient
    from core.store.embeddings import Embedder

#: what each need is, as an error names it ("needs a next-token scorer"); a method names its own with
#: `describe_need` where it registers the service
NEED_NAMES: dict[str, str] = {"embedder": "an embedder", "chat": "a chat LLM"}


def describe_need(need: str, description: str) -> None:
    NEED_NAMES[need] = description


#: bounds every chunker holds its size parameters to (`check_range`), in the unit the parameter counts. Below the
#: floor a chunker cuts a handful of tokens per chunk, and every chunk is embedded and indexed: `naive-500t:size=1`
#: made about one chunk per token. Above the ceiling a chunk is far past what any embedder reads (MiniLM reads 256
#: word pieces, the largest common models 8192 tokens), so a larger value only hides a typo.
MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS = 16, 8192
MIN_CHUNK_WORDS, MAX_CHUNK_WORDS = 8, 6000


def check_range(chunker: str, name: str, value: float, low: float, high: float, unit: str = "",
                why: str = "") -> None:
    """A ConfigError of one line unless `low <= value <= high`: it names the chunker, the parameter, its bounds
    (with their unit), the value given and, when given, why the bound is there."""
    if not low <= value <= high:
        bounds = f"between {low:g} and {high:g}" + (f" {unit}" if unit else "")
        raise ConfigError(f"{chunker}: {name} must be {bounds} (got {value:g})" + (f"; {why}" if why else ""))


def check_tokens(chunker: str, name: str, value: float) -> None:
    """A chunk size in tokens, within MIN_CHUNK_TOKENS..MAX_CHUNK_TOKENS."""
    check_range(chunker, name, value, MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS, "tokens",
                "smaller makes a chunk of every few tokens, each embedded" if value < MIN_CHUNK_TOKENS else "")


def check_words(chunker: str, name: str, value: float) -> None:
    """A chunk size in words, within MIN_CHUNK_WORDS..MAX_CHUNK_WORDS."""
    check_range(chunker, name, value, MIN_CHUNK_WORDS, MAX_CHUNK_WORDS, "words",
                "smaller makes a chunk of every few words, each embedded" if value < MIN_CHUNK_WORDS else "")


def check_overlap(chunker: str, overlap: int, size: int, unit: str = "tokens") -> None:
    """Window overlap: 0 up to half the window (in `unit`, the size's). A window that moves by a few tokens
    repeats nearly all of the text in every chunk (size 500, overlap 499: one 500-token chunk per token)."""
    check_range(chunker, "overlap", overlap, 0, size // 2, unit,
                f"at most half of size {size}, or the windows repeat the text")


class ChunkerContext:
    """The services of a run, by the need a chunker names in `needs` ("embedder", "chat", "llm", "scorer", ...),
    built once per run by `core.services.build_services`. The generic needs have typed accessors here; a method
    owns the typed accessor of its own need (`core.methods.chop.cnm.cnm_backend_of`,
    `core.methods.lgmgc.scoring.scorer_of`), so a new service touches only its method package and its settings."""

    def __init__(self, services: Mapping[str, Any] | None = None, **by_need: Any) -> None:
        self._by_need = {k: v for k, v in {**(services or {}), **by_need}.items() if v is not None}
        #: asked between documents (and by a chunker between its slow steps): True once the run's caller went
        #: away, so chunking on a worker thread does not go on for no one
        self.should_stop: Callable[[], bool] = lambda: False

    def check_stop(self) -> None:
        """Raise Stopped once `should_stop` says so; cheap enough to call between any two steps."""
        if self.should_stop():
            raise Stopped(STOPPED)

    def get(self, need: str) -> Any:
        """The service for `need`, or None when the run has none."""
        return self._by_need.get(need)

    @property
    def embedder(self) -> Embedder | None:
        return self._by_need.get("embedder")

    @property
    def chat(self) -> LLMClient | None:
        return self._by_need.get("chat")


#: what a chunker's parameter holds: a size, a threshold, a switch, or a choice by name (every field of a chunker)
ParamValue = str | int | float | bool | None


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
    #: every registered chunker is a dataclass of its parameters (`dataclasses.fields` reads them)
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[object]]]
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

    def snippet(self) -> str | None:
        """The Python that builds this chunker, with these parameters, in the user's own stack ("Use it in your
        code", `core.chunkers.snippets`): it reads the document's text from `text` and leaves the chunk texts in
        `chunks`. None when the chunker has none to offer."""
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
        split the text in Python meanwhile. The context's stop flag holds for the whole of it (`stopping`), so the
        chunker's long loops end at their next `check_stop` once the run is stopped."""
        prefetch_token_map(doc.text)
        with stopping(self.context.should_stop):
            result = self.chunk(doc)
        if isinstance(self, MetadataPrefix) and self.prefix != "none":
            from core.chunkers.headers import header_texts

            for chunk, header in zip(result.chunks, header_texts(doc, [c.start for c in result.chunks],
                                                                  self.prefix)):
                chunk.prefix, chunk.prefix_place = header, "before"
                chunk.meta["prefix_kind"] = self.prefix
        return result

    def params(self) -> dict[str, ParamValue]:
        """The chunker's parameters by name, as its spec names them (a default that came later left out)."""
        out: dict[str, ParamValue] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
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
            service = self.context.get(need)
            parts.append(f"{need}={getattr(service, 'key', type(service).__name__)}")
        return ":".join(parts)


@dataclass
class MetadataPrefix:
    """Mixin for chunkers that can carry a contextual header: `prefix=title|headings` (core.chunkers.headers)."""

    prefix: PrefixMode = "none"

    def check_prefix(self) -> None:
        if self.prefix not in PREFIX_MODES:
            raise ConfigError(f"prefix must be one of {', '.join(PREFIX_MODES)} (got '{self.prefix}')")


#: the values of `TitleRouting.retrieval`
Routing = Literal["off", "route"]
ROUTING_MODES: tuple[Routing, ...] = get_args(Routing)


@dataclass
class TitleRouting:
    """Mixin for chunkers whose runs can be searched by title routing: `retrieval=route` searches only the chunks
    of the document whose title the question names (`core.store.routing`), the metadata baseline beside CHOP's
    CNM filter. It steers retrieval only: left out of `identity` (the chunks and their caches are the plain
    chunker's), and out of the spec at its default, `off`."""

    retrieval: Routing = "off"
    retrieval_params: ClassVar[tuple[str, ...]] = ("retrieval",)

    def check_retrieval(self) -> None:
        if self.retrieval not in ROUTING_MODES:
            raise ConfigError(f"retrieval must be one of {', '.join(ROUTING_MODES)} (got '{self.retrieval}'; "
                              "filter and boost are chop's)")


def build_chunks(doc: Document, spans: Sequence[tuple[int, int]], token_counts: Sequence[int] | None = None,
                 **meta: JsonValue) -> list[Chunk]:
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
