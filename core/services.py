"""The one place that turns `Settings` into the services chunkers and retrieval use, for the app, the command line
and the benchmarks alike.

Every run needs a workspace, an embedder, a vector store and the lexical indexes. The other services are named by
`Chunker.needs` ("llm", "scorer", "chat") and built by a factory registered under that name: the generic chat
client here, CHOP's CNM backend and LGMGC's scorer in their method packages, which `core.catalog` loads. A caller
that knows which chunkers it will run asks for only what they need (`needs_of`); the app asks for everything,
which is cheap because the factories load no model until it is first used.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ChunkLensError, ConfigError
from core.infra.keys import KeyRing
from core.infra.urls import redact_url
from core.infra.workspace import Workspace
from core.settings import Settings
from core.store.embedders import make_embedder
from core.store.index import StoreSettings, VectorStore
from core.store.lexical import LexicalStore

if TYPE_CHECKING:
    from core.llm.base import LLMClient
    from core.store.embeddings import Embedder
    from core.store.rerank import Reranker
    from core.store.retrieval import RetrievalSettings, Retriever

#: how many Services a long-lived caller (the app's `st.cache_resource`) keeps at once. Each holds an embedder and a
#: store, about 110 MB with the bundled MiniLM, and every distinct settings combination or typed key is one more:
#: unbounded, 12 visitors with keys of their own kept 1.4 GB for the life of the server. The least recently used
#: one goes first; a session whose Services went is given a new one on its next rerun.
MAX_CACHED_SERVICES = 4
#: factory(settings, workspace, the services built before it (read through their typed accessors), the key ring that
#: says which key goes where) -> the service
ServiceFactory = Callable[[Settings, Workspace, ChunkerContext, KeyRing], object]
FACTORIES: dict[str, ServiceFactory] = {}


def register_service(name: str) -> Callable[[ServiceFactory], ServiceFactory]:
    """Decorator: `factory` builds the service chunkers ask for as `name` in their `needs`."""
    def add(factory: ServiceFactory) -> ServiceFactory:
        if name in FACTORIES and FACTORIES[name] is not factory:
            raise ConfigError(f"a service named '{name}' is already registered")
        FACTORIES[name] = factory
        return factory
    return add


@dataclass
class Services:
    settings: Settings
    workspace: Workspace
    embedder: Embedder
    store: VectorStore
    #: the services chunkers name in `needs`, by need ("chat", CHOP's "llm", LGMGC's "scorer", ...): each built by
    #: the factory registered under that name; a method reads its own through its typed accessor
    provided: dict[str, object] = field(default_factory=dict)
    lexical: LexicalStore | None = None  # BM25 indexes of the chunk runs, in the workspace
    #: the operator's reranker (`rerank_model`), loaded on first use: None until a search asks for "model"
    model_reranker: Callable[[], Reranker] | None = field(default=None, repr=False)
    #: sentence max-sim rerankers by the documents they read: every chunker of a library shares one, so each
    #: document's sentence vectors are read from the cache once, not once per chunker
    _maxsim: dict[tuple[tuple[str, int], ...], Reranker] = field(default_factory=dict, repr=False)

    def get(self, need: str) -> Any:
        """The service for `need` (None when it was not built)."""
        return self.embedder if need == "embedder" else self.provided.get(need)

    @property
    def chat(self) -> LLMClient | None:
        """The chat client: lumber's, and the one generated answers come from."""
        return self.get("chat")

    def context(self) -> ChunkerContext:
        return ChunkerContext({"embedder": self.embedder, **self.provided})

    def retriever(self, indexed: Any, policy: Any, retrieval: RetrievalSettings, explain: bool = False,
                  texts: Mapping[str, str] | None = None) -> Retriever:
        """The one way a chunk run's retriever is put together, for the app and the bench alike: the run's chunks
        and collection (`indexed`, a `core.pipeline.IndexedRun`), its chunker's retrieval policy, these services'
        store and embedder, the run's BM25 index where the search (or an explanation) reads it, and the reranker
        `retrieval` asks for over the run's documents (`texts`, default the ones it was indexed from)."""
        from core.store.retrieval import Retriever

        lexical = indexed.lexical
        if self.lexical is not None and (retrieval.uses_lexical or explain):
            lexical = indexed.lexical_from(self.lexical)
        reranker = self.reranker(retrieval, indexed.texts if texts is None else texts)
        return Retriever(self.store, indexed.collection, indexed.run.chunks, self.embedder, policy, retrieval,
                         lexical, explain, reranker)

    def reranker(self, retrieval: RetrievalSettings, texts: Mapping[str, str]) -> Reranker | None:
        """The reranker `retrieval` asks for, over a run whose documents' texts are `texts` (None: no reranking)."""
        if retrieval.rerank == "maxsim":
            from core.store.rerank import SentenceMaxSim

            key = tuple(sorted((doc_id, hash(text)) for doc_id, text in texts.items()))
            held = self._maxsim.get(key)
            if held is None:
                while len(self._maxsim) >= 8:  # a few libraries' worth; the oldest goes first
                    self._maxsim.pop(next(iter(self._maxsim)))
                held = self._maxsim[key] = SentenceMaxSim(self.embedder, dict(texts))
            return held
        if retrieval.rerank == "model":
            if self.model_reranker is None:
                raise ConfigError("reranking with a model needs a reranker: a CrossEncoder folder or a /rerank URL "
                                  "(setting rerank_model, or --rerank-model)")
            return self.model_reranker()
        return None


def needs_of(specs: Iterable[str]) -> set[str]:
    """The services the chunkers of these specs need (a bad spec is a ConfigError now, before any slow work)."""
    return {need for spec in specs for need in make_chunker(spec).needs}


def open_store(settings: Settings, workspace: Workspace) -> VectorStore:
    address = settings.chroma_address()
    if settings.chroma_server.strip() and address is None:
        raise ChunkLensError(f"Chroma server address must look like host:port, not "
                             f"'{redact_url(settings.chroma_server)}'")
    return VectorStore(StoreSettings(host=address[0], port=address[1]) if address
                       else StoreSettings(path=workspace.chroma))


def build_services(settings: Settings, keys: KeyRing | None = None,
                   needs: Collection[str] | None = None) -> Services:
    """The services `settings` names; with `needs`, only the named ones beyond the embedder and store.

    `keys` says which API key may go to which base URL (`core.infra.keys`). Without one, the server's key goes only to
    api.openai.com and OPENAI_BASE_URL: a caller whose settings name other addresses it trusts (the command line)
    says so with `KeyRing.operator`."""
    keys = keys or KeyRing.operator(())
    ws = Workspace.open(settings.workspace)
    embedder = make_embedder(settings.embedder, long_text=settings.long_text, cache_dir=ws.cache,
                             base_url=settings.embedder_base_url or None,
                             api_key=keys.key_for(settings.embedder_base_url))
    return Services(settings, ws, embedder, open_store(settings, ws), provide(settings, ws, embedder, keys, needs),
                    LexicalStore(ws.lexical), _model_reranker(settings, keys))


def provide(settings: Settings, ws: Workspace, embedder: Embedder, keys: KeyRing,
            needs: Collection[str] | None = None) -> dict[str, object]:
    """The services `needs` names (every registered one for None) by need, each built by its factory in the order
    they were registered, with the embedder and the ones built before it at hand: for `build_services` here and
    for a Ray worker's chunker (`core.evaluation.prefetch.worker_context`)."""
    built: dict[str, object] = {}
    for name, factory in FACTORIES.items():
        if needs is None or name in needs:
            built[name] = factory(settings, ws, ChunkerContext({"embedder": embedder, **built}), keys)
    return built


def _model_reranker(settings: Settings, keys: KeyRing) -> Callable[[], Reranker] | None:
    """A loader of the operator's reranker that loads it once, on first use; None when none is configured."""
    address = settings.rerank_model.strip()
    if not address:
        return None
    from functools import cache

    from core.store.rerank import make_model_reranker

    @cache
    def load() -> Reranker:
        return make_model_reranker(address, api_key=keys.key_for(address), timeout=settings.model_timeout)
    return load


@register_service("chat")
def _chat_client(settings: Settings, ws: Workspace, built: ChunkerContext, keys: KeyRing) -> LLMClient:
    """The chat model the settings name (`Settings.chat_backend`): the OpenAI-compatible server, the in-process
    llama.cpp model, or the bundled model through transformers."""
    from core.llm.factory import make_chat_client

    if settings.chat_backend == "openai":
        return make_chat_client("openai", ws.cache, model=settings.model_name or None,
                                base_url=settings.model_server_url or None,
                                api_key=keys.key_for(settings.model_server_url), timeout=settings.model_timeout)
    if settings.chat_backend == "llamacpp":
        return make_chat_client("llamacpp", ws.cache, model=settings.model_name or None)
    # `model_name` names a transformers model only where the CNM backend runs one too
    return make_chat_client("local", ws.cache,
                            model=settings.model_name or None if settings.cnm_backend == "local" else None)
