"""LGMGC's service: the next-token scorer lg / lgmgc ask for as "scorer" (it loads its model on first use)."""

from __future__ import annotations

from core.chunkers.base import ChunkerContext, describe_need
from core.infra.keys import KeyRing
from core.infra.workspace import Workspace
from core.llm.local_model import BUNDLED_SMOLLM2
from core.methods.lgmgc.scoring import EosScorer, NextTokenScorer
from core.services import register_service
from core.settings import Settings

describe_need("scorer", "a next-token scorer")


@register_service("scorer")
def eos_scorer(settings: Settings, ws: Workspace, built: ChunkerContext, keys: KeyRing) -> NextTokenScorer:
    if settings.scorer_engine == "llamacpp":
        from core.methods.lgmgc.scoring_llamacpp import LlamaCppEosScorer

        return LlamaCppEosScorer(settings.scorer_model.strip() or None, eos_mode=settings.eos_mode)
    return EosScorer(settings.scorer_model.strip() or BUNDLED_SMOLLM2, ws.cache / "models",
                     eos_mode=settings.eos_mode, dtype=settings.scorer_dtype)
