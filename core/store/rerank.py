"""A second stage that re-orders the first stage's top hits: where a question's answer sits in one sentence of a
500-token chunk, the chunk's one vector (of its first 256 word pieces) and its BM25 score over every word both
blur it; a score read closer to the text puts the right chunk first more often.

Three rerankers, one protocol (`Reranker.scores`):
- `SentenceMaxSim` ("maxsim", offline, no extra model): a chunk scores the cosine of the question with its
  closest sentence, with the run's own embedder. Sentences are the document's (`core.text.sentences`), each
  embedded once through the embedder's cache: the very vectors the `cosine` chunker asks for, so after it has
  run they cost nothing.
- `CrossEncoderReranker` ("model", a local folder): a sentence-transformers CrossEncoder reads question and
  chunk together.
- `EndpointReranker` ("model", an http(s) URL): a `/rerank` server, in either of the two shapes in use: Cohere's
  (`{"query", "documents"}` -> `{"results": [{"index", "relevance_score"}]}`; also Jina, vLLM, llama.cpp) or
  Hugging Face TEI's (`{"query", "texts"}` -> `[{"index", "score"}]`).

How the two orders combine is `rerank_order`: a weighted reciprocal-rank fusion of the first-stage rank and the
reranker's rank (weight 1: the reranker's order alone, as a cross-encoder is usually used).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core import text as T
from core.infra.errors import ChunkLensError, ConfigError
from core.infra.jsonio import JsonObject
from core.infra.urls import redact_url
from core.schema.chunks import Chunk
from core.schema.hits import Hit
from core.store.embeddings import Embedder

#: each reranker's weight in `rerank_order` when a setting names none. maxsim's is the weight `python -m bench.rerank`
#: chose over every set we have (docs/RETRIEVAL.md); a model's order is taken alone, as cross-encoders are used.
DEFAULT_WEIGHTS = {"none": 1.0, "maxsim": 0.4, "model": 1.0}


class Reranker(Protocol):
    @property
    def key(self) -> str:
        """What the scores depend on (a retriever built with another reranker is another retriever)."""

    def scores(self, query: str, vector: np.ndarray, chunks: Sequence[Chunk]) -> list[float]:
        """One relevance score per chunk, higher is better; `vector` is the question's, from the run's embedder."""
        ...

    def describe(self) -> str: ...


def rerank_order(scores: Sequence[float], weight: float, rrf_k: int = 60) -> list[int]:
    """The new order of hits now in first-stage order, given the reranker's `scores`: each hit gets
    (1 - weight) / (k + first rank) + weight / (k + reranker rank). Ties keep the first-stage order."""
    by_score = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    second = {i: rank for rank, i in enumerate(by_score, start=1)}
    fused = [(1.0 - weight) / (rrf_k + i + 1) + weight / (rrf_k + second[i]) for i in range(len(scores))]
    return sorted(range(len(scores)), key=lambda i: (-fused[i], i))


def reranked(reranker: Reranker, query: str, vector: np.ndarray, hits: list[Hit], k: int, depth: int,
             weight: float, rrf_k: int = 60) -> list[Hit]:
    """The first `depth` hits re-ordered by the reranker (fused with their first rank by `rerank_order`), then the
    top k; each hit keeps its first-stage rank and the reranker's score."""
    head = hits[:depth]
    scores = reranker.scores(query, vector, [h.chunk for h in head])
    order = rerank_order(scores, weight, rrf_k)
    out = [head[i] for i in order] + hits[len(head):]
    for rank, hit in enumerate(out, start=1):
        hit.first_rank = hit.rank
        hit.rank = rank
    for i, hit in enumerate(head):
        hit.rerank_score = scores[i]
    return out[:k]


@dataclass
class _DocSentences:
    """A document's sentences and, row by row as chunks ask for them, their unit vectors."""

    text: str
    starts: np.ndarray
    ends: np.ndarray
    vectors: np.ndarray | None = None  # (sentences, dim) once the first row is embedded
    filled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def held_by(self, chunk: Chunk) -> np.ndarray:
        """The sentences a chunk holds: at least half inside it, or, for a chunk shorter than half of the
        sentence it sits in, the sentences it touches."""
        inside = np.minimum(self.ends, chunk.end) - np.maximum(self.starts, chunk.start)
        held = np.flatnonzero(inside * 2 >= self.ends - self.starts)
        return held if held.size else np.flatnonzero(inside > 0)

    def fill(self, rows: np.ndarray, embedder: Embedder) -> None:
        missing = rows[~self.filled[rows]] if self.filled.size else rows
        if missing.size == 0:
            return
        vecs = np.asarray(embedder.embed([self.text[self.starts[i]:self.ends[i]] for i in missing]), dtype=np.float32)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        if self.vectors is None:
            self.vectors = np.zeros((len(self.starts), vecs.shape[1]), dtype=np.float32)
            self.filled = np.zeros(len(self.starts), dtype=bool)
        self.vectors[missing] = vecs
        self.filled[missing] = True


@dataclass
class SentenceMaxSim:
    """A chunk's score is the cosine of the question with the best of the sentences it holds (a sentence counts
    when at least half of it lies inside the chunk; a chunk inside one long sentence gets that sentence).
    `texts` maps each document id of the run to its text, the text the chunk offsets point into. Only the
    sentences of chunks that reach a reranked head are embedded, once each, so the first question over a large
    upload costs a few hundred sentences, not the whole library."""

    embedder: Embedder
    texts: Mapping[str, str]
    _docs: dict[str, _DocSentences] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"maxsim:{self.embedder.key}"

    def describe(self) -> str:
        return "sentence max-sim (the run's embedder, over each chunk's sentences)"

    def _sentences(self, doc_id: str) -> _DocSentences:
        held = self._docs.get(doc_id)
        if held is None:
            text = self.texts.get(doc_id)
            if text is None:
                raise ChunkLensError(f"maxsim reranking: the text of document '{doc_id}' is not known")
            spans = T.sentences(text) or [(0, len(text))]
            held = self._docs[doc_id] = _DocSentences(text, np.array([s for s, _ in spans]),
                                                      np.array([e for _, e in spans]))
        return held

    def scores(self, query: str, vector: np.ndarray, chunks: Sequence[Chunk]) -> list[float]:
        q = np.asarray(vector, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        rows = [(doc, doc.held_by(chunk)) for chunk in chunks for doc in [self._sentences(chunk.doc_id)]]
        by_doc: dict[int, tuple[_DocSentences, list[np.ndarray]]] = {}
        for doc, held in rows:
            by_doc.setdefault(id(doc), (doc, []))[1].append(held)
        for doc, helds in by_doc.values():
            doc.fill(np.unique(np.concatenate(helds)), self.embedder)
        return [float((doc.vectors[held] @ q).max()) if held.size and doc.vectors is not None else -1.0
                for doc, held in rows]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder (no download)."""

    def __init__(self, folder: str) -> None:
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise ConfigError(f"reranker: '{folder}' is not a folder (a sentence-transformers CrossEncoder folder "
                              "or an http(s) URL of a /rerank server)")
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any loading failure is the folder's problem, said in one line
            raise ConfigError(f"reranker: could not load a CrossEncoder from '{folder}': {exc}") from exc
        self.key = f"cross-encoder:{path.resolve()}"
        self.name = path.name

    def describe(self) -> str:
        return f"cross-encoder {self.name}"

    def scores(self, query: str, vector: np.ndarray, chunks: Sequence[Chunk]) -> list[float]:
        if not chunks:
            return []
        return [float(s) for s in self.model.predict([(query, c.embed_text) for c in chunks],
                                                     show_progress_bar=False)]


class EndpointReranker:
    """A `/rerank` HTTP endpoint (Cohere / Jina / vLLM / llama.cpp shape, or TEI's). `url` is the endpoint itself
    or a base URL (`/rerank` is added)."""

    def __init__(self, url: str, model: str = "", api_key: str | None = None, timeout: float = 60.0) -> None:
        url = url.strip().rstrip("/")
        self.url = url if url.endswith("/rerank") else f"{url}/rerank"
        self.model = model
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.key = f"endpoint:{redact_url(self.url)}:{model}"

    def describe(self) -> str:
        return f"/rerank at {redact_url(self.url)}" + (f" ({self.model})" if self.model else "")

    def _post(self, body: JsonObject) -> Any:
        import httpx

        from core.llm.budget import charge_remote

        charge_remote(self.describe())  # a shared server's hour per visitor
        try:
            reply = httpx.post(self.url, json=body, headers=self._headers, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise ChunkLensError(f"reranker at {redact_url(self.url)} did not answer: {exc}") from exc
        if reply.status_code in (400, 404, 422) and "documents" in body:
            return None  # perhaps TEI's shape
        if reply.status_code != 200:
            raise ChunkLensError(f"reranker at {redact_url(self.url)} answered HTTP {reply.status_code}")
        try:
            return reply.json()
        except ValueError as exc:
            raise ChunkLensError(f"reranker at {redact_url(self.url)} answered something that is not JSON") from exc

    def scores(self, query: str, vector: np.ndarray, chunks: Sequence[Chunk]) -> list[float]:
        if not chunks:
            return []
        texts = [c.embed_text for c in chunks]
        body: JsonObject = {"query": query, "documents": [*texts], "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        answer = self._post(body)
        if answer is None:
            answer = self._post({"query": query, "texts": [*texts], "truncate": True})
        return _scores_from(answer, len(texts), redact_url(self.url))


def _scores_from(answer: Any, n: int, where: str) -> list[float]:
    """Scores in input order from either answer shape; anything else is one clear error."""
    out: list[float | None] = [None] * n
    try:
        rows = answer["results"] if isinstance(answer, dict) else answer
        for row in rows:
            score = row.get("relevance_score", row.get("score"))
            out[int(row["index"])] = float(score)
    except (TypeError, KeyError, ValueError, IndexError, AttributeError):
        raise ChunkLensError(f"reranker at {where} answered in a shape ChunkLens does not read "
                             "(expected results with index and relevance_score, or index and score)") from None
    if any(s is None for s in out):
        raise ChunkLensError(f"reranker at {where} scored {sum(s is not None for s in out)} of {n} chunks")
    return [float(s) for s in out if s is not None]


def make_model_reranker(address: str, model: str = "", api_key: str | None = None,
                        timeout: float = 60.0) -> Reranker:
    """The reranker an operator names: an http(s) URL is a /rerank server, anything else a CrossEncoder folder."""
    if not address.strip():
        raise ConfigError("reranking with a model needs a reranker: a CrossEncoder folder or a /rerank URL "
                          "(setting rerank_model, or --rerank-model)")
    if address.strip().lower().startswith(("http://", "https://")):
        return EndpointReranker(address, model, api_key, timeout)
    return CrossEncoderReranker(address)
