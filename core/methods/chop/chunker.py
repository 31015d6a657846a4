"""CHOP (arXiv 2604.15802): fixed token windows, each given a CNM prefix (category / nouns / model).

The CNM is extracted for the first window, then carried forward while the Continuity Decision says the text
goes on, and extracted afresh where it says a new document starts (METHODS.md, Eq. 2-4). The span of every
chunk is untouched; the prefix is stored beside it and embedded with it (before, after, or not at all).

Modes: "pairs" judges each adjacent pair independently (Eq. 2; all calls can run at once); "anchor" judges
each window against the first window of the current run (sequential). Retrieval settings (`retrieval`,
`boost`) give the chunker its `retrieval_policy` (core.methods.chop.policy); they do not change the chunks.
`retrieval=route` is the title routing every chunker takes (core.store.routing), on CHOP's chunks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from core.chunkers.base import Chunker, check_overlap, check_range, check_tokens, token_window_chunks
from core.chunkers.registry import register
from core.chunkers.snippets import chunklens_snippet
from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.infra.stopping import check_stop
from core.llm.base import LLMError
from core.methods.chop.cnm import TITLE_PREFIX, CnmResult, DecisionResult, cnm_backend_of, prefix_text
from core.methods.chop.policy import CnmPolicy, store_metadata
from core.schema.chunks import Chunk, Chunking
from core.schema.documents import Document
from core.schema.runs import ChunkedRun
from core.store.routing import TitleRoute

#: how continuity is judged: each window against the one before (`pairs`) or against the current run's first (`anchor`)
ChopMode = Literal["pairs", "anchor"]
#: where the CNM prefix stands in each chunk's embedded text, if anywhere
CnmPlace = Literal["before", "after", "none"]
#: how a run is searched: plainly, with the question's CNM boosting or filtering its chunks, or by title routing
ChopRetrieval = Literal["off", "boost", "filter", "route"]


@register
@dataclass
class ChopChunker(Chunker):
    name = "chop"
    version = 2  # naive-500t v2 windows
    needs = ("llm",)
    retrieval_params = ("retrieval", "boost")
    size: int = 500
    overlap: int = 100
    mode: ChopMode = "pairs"
    prefix: CnmPlace = "before"
    use_title: bool = True  # the extractor sees the document title (a file name) with the first window
    retrieval: ChopRetrieval = "off"
    boost: float = 0.1

    def validate(self) -> None:
        check_tokens(self.name, "size", self.size)
        check_overlap(self.name, self.overlap, self.size)
        check_range(self.name, "boost", self.boost, 0, 1)
        for key, value, allowed in (("mode", self.mode, get_args(ChopMode)),
                                    ("prefix", self.prefix, get_args(CnmPlace)),
                                    ("retrieval", self.retrieval, get_args(ChopRetrieval))):
            if value not in allowed:
                raise ConfigError(f"chop: {key} must be one of {', '.join(allowed)} (got '{value}')")

    def retrieval_policy(self, titles: Mapping[str, str] | None = None) -> CnmPolicy | TitleRoute | None:
        if self.retrieval == "route":
            return TitleRoute(titles)
        return None if self.retrieval == "off" else CnmPolicy(self.retrieval, self._backend(), self.boost)

    store_metadata = staticmethod(store_metadata)

    def prepare(self, docs: Sequence[Document]) -> None:
        """A backend that learns the library (`extract`) reads it into a copy of its own for this chunker (the
        services' backend is shared by every session and stays as it is), once, when first needed: before the
        first document is chunked, or, for a run loaded from the cache, when its policy first tags a question
        (a few seconds on a large library, not paid by a reload that asks nothing)."""
        self._library = list(docs)
        self._learned = None

    def _backend(self) -> Any:
        backend = cnm_backend_of(self.context)
        learned = getattr(backend, "learned", None)
        if learned is None or getattr(self, "_library", None) is None:
            return backend
        if self._learned is None:
            self._learned = learned(self._library)
        return self._learned

    def taught(self, run: ChunkedRun, documents: Sequence[Document],
               examples: Mapping[str, Mapping[str, str]]) -> ChunkedRun:
        """`run` with hand corrections of some manuals' tags carried to the whole library (`family.teach`): a new
        run, named apart from the untaught one so neither cache mixes them."""
        from core.methods.chop.family import teach

        chunks, _ = teach(run.chunks, documents, examples)
        digest = hashlib.sha256(json.dumps(examples, sort_keys=True).encode()).hexdigest()[:12]
        return replace(run, identity=f"{run.identity}:examples={digest}", chunks=chunks)

    def snippet(self) -> str:
        """No library cuts as this does: the lines that run it through ChunkLens's core."""
        return chunklens_snippet(self)

    def chunk(self, doc: Document) -> Chunking:
        chunks = token_window_chunks(doc, self.size, self.overlap)
        check_stop()
        if not chunks:
            return Chunking([], {"kind": "continuity", "decisions": [], "joins": [*doc.joins]})
        backend = self._backend()
        title = doc.title if self.use_title and not doc.segments and doc.title else None
        if hasattr(backend, "for_document"):  # a backend that reads the document around its windows
            backend = backend.for_document(doc, [(c.start, c.end) for c in chunks], title)
        texts = [c.text for c in chunks]
        check_stop()
        decisions = self._decide(backend, texts)
        starts = [0] + [i for i, d in enumerate(decisions, start=1) if not d.same]
        if getattr(backend, "reads_runs", False):
            # each run's text from its cut (where the decision says the new document starts) to the next cut:
            # the new tag is read after the cut, never from the tail of the document before it
            # (a cut may lie before the window's start: a title in the previous window's second half)
            cuts = [chunks[0].start] + [max(0, chunks[i].start + (decisions[i - 1].cut or 0))
                                        for i in starts[1:]]
            inputs = [doc.text[cut:end] for cut, end in zip(cuts, [*cuts[1:], len(doc.text)])]
        else:
            inputs = [texts[i] for i in starts]
        if title:
            inputs[0] = f"{TITLE_PREFIX} {title}\n\n{inputs[0]}"
        check_stop()
        extracted = backend.extract(inputs)
        _raise_if_failed(extracted, decisions)
        self._annotate(chunks, decisions, dict(zip(starts, extracted)))
        trace: JsonObject = {
            "kind": "continuity",
            "backend": backend.label,
            "decisions": [None] + [d.same for d in decisions],
            "reasons": [None] + [d.reason for d in decisions],
            "positions": [c.start for c in chunks],
            "joins": [*doc.joins],
            "cd_calls": len(decisions),
            "cnm_calls": len(starts),
        }
        return Chunking(chunks, trace)

    def _decide(self, backend: Any, texts: list[str]) -> list[DecisionResult]:
        if len(texts) < 2:
            return []
        if self.mode == "pairs":
            return backend.decide([(texts[i - 1], texts[i]) for i in range(1, len(texts))])
        decisions: list[DecisionResult] = []
        anchor = texts[0]
        for i in range(1, len(texts)):
            check_stop()
            (d,) = backend.decide([(anchor, texts[i])])
            decisions.append(d)
            if d.failed:
                break
            if not d.same:
                anchor = texts[i]
        return decisions

    def _annotate(self, chunks: list[Chunk], decisions: list[DecisionResult], fresh: dict[int, CnmResult]) -> None:
        current: CnmResult | None = None
        for i, chunk in enumerate(chunks):
            if i in fresh:
                current = fresh[i]
            assert current is not None
            decision = decisions[i - 1] if i else None
            chunk.meta.update({
                "cnm": current.cnm.model_dump(),
                "cnm_source": "extracted" if i in fresh else "inherited",
                "cnm_from": next(j for j in sorted(fresh, reverse=True) if j <= i),
                "cnm_sources": dict(current.sources),  # where each part of the run's tag came from
                "cnm_raw": fresh[i].raw if i in fresh else None,
                "cnm_error": fresh[i].error if i in fresh else None,
                "cnm_seconds": round(fresh[i].seconds, 4) if i in fresh else None,
                "continuity": None if decision is None else decision.same,
                "continuity_reason": None if decision is None else decision.reason,
                "continuity_cut": None if decision is None else decision.cut,
                "continuity_raw": None if decision is None else decision.raw,
                "continuity_error": None if decision is None else decision.error,
                "continuity_seconds": None if decision is None else round(decision.seconds, 4),
                "prefix_mode": self.prefix,
            })
            if self.prefix != "none":
                chunk.prefix = prefix_text(current.cnm)
                chunk.prefix_place = "after" if self.prefix == "after" else "before"


def _raise_if_failed(extracted: list[CnmResult], decisions: list[DecisionResult]) -> None:
    results: list[CnmResult | DecisionResult] = [*extracted, *decisions]
    failed = [r for r in results if r.failed]
    if failed:
        done = len(extracted) + len(decisions) - len(failed)
        raise LLMError(f"{len(failed)} LLM calls failed ({failed[0].error}); the {done} answers that arrived are "
                       "saved in the answer cache, so a rerun continues from there")
