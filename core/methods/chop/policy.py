"""CHOP's retrieval policy (beyond the paper, which only prefixes): tag each question with the same CNM backend
as the chunks, then search only the chunks of the question's model ("filter") or raise those that match it
("boost"). The generic retriever (`core.store.retrieval`) drives it through `RetrievalPolicy`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.infra.jsonio import JsonObject
from core.methods.chop.cnm import CNM
from core.methods.chop.rules import models_match
from core.schema.chunks import Chunk, StoreValue

#: the store metadata key of a chunk's CNM model (written by `store_metadata`, used by the filter)
STORE_FIELD = "cnm_model"


def store_metadata(chunk: Chunk) -> dict[str, StoreValue]:
    """What the vector store keeps beside a chop chunk: its CNM category and model, when it has them."""
    cnm = CNM.of(chunk)
    if cnm is None:
        return {}
    return {f"cnm_{name}": value for name, value in (("category", cnm.category), ("model", cnm.model)) if value}


def cnm_match(question: CNM, chunk: CNM | None) -> float:
    """1 for the same model, 0.5 for the same category only, 0 otherwise."""
    if chunk is None:
        return 0.0
    if models_match(question.model, chunk.model):
        return 1.0
    qc, cc = question.category, chunk.category
    return 0.5 if qc and cc and qc.lower() == cc.lower() else 0.0


@dataclass
class CnmPolicy:
    mode: str  # "boost" | "filter"
    backend: Any  # anything with .extract(texts) -> [CnmResult] (PromptedCnm, RuleCnm)
    boost: float = 0.1
    pool: int = 50
    store_field: str = STORE_FIELD
    label: str = "question CNM"

    def tag_queries(self, queries: Sequence[str], values: Sequence[str] = ()) -> list[JsonObject]:
        """Each question's CNM. A backend that can (`extract`) tags it against the models the run's chunks carry
        (`values`), so it needs nothing learned from the library; the others read the question alone."""
        among = getattr(self.backend, "tag_queries", None)
        results = among(list(queries), list(values)) if among is not None else self.backend.extract(list(queries))
        return [r.cnm.model_dump() for r in results]

    def chunk_value(self, chunk: Chunk) -> str:
        cnm = CNM.of(chunk)
        return (cnm.model if cnm else None) or ""

    def filter_values(self, tags: JsonObject, values: Sequence[str]) -> tuple[list[str], str]:
        model = _model(tags)
        kept = [v for v in values if models_match(model, v)]
        if kept:
            return kept, "filter"
        return [], "none (no model)" if not model else "none (no match)"

    def residual_query(self, query: str, tags: JsonObject) -> str:
        """The question without the words of the model its filter has already matched: every chunk left names
        that model, so its words would only favour the chunks that repeat the name."""
        model = _model(tags) or ""
        words = {w.casefold() for w in re.findall(r"\w+", model)}
        if not words:
            return query
        rest = re.sub(r"\w+", lambda m: "" if m.group().casefold() in words else m.group(), query)
        return rest if re.search(r"\w", rest) else query

    def match(self, tags: JsonObject, chunk: Chunk) -> float:
        return cnm_match(CNM.model_validate(tags), CNM.of(chunk))


def _model(tags: JsonObject) -> str | None:
    """The model of a question's tags (a CNM's JSON form, as `tag_queries` writes it)."""
    model = tags.get("model")
    return model if isinstance(model, str) else None
