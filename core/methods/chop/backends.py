"""CHOP's CNM backend, the service chop chunkers ask for as "llm": the rule-based tagger or the extractor that
learns the library (neither uses a model), or CNM
prompts over a cached chat client ("local" transformers model, "llamacpp" in-process GGUF with JSON-constrained
answers, or any OpenAI-compatible server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.chunkers.base import ChunkerContext, describe_need
from core.infra.errors import ConfigError
from core.infra.keys import KeyRing
from core.infra.workspace import Workspace
from core.llm.factory import make_chat_client
from core.methods.chop.cnm import PromptedCnm
from core.methods.chop.extract import ExtractCnm
from core.methods.chop.rules import RuleCnm
from core.services import register_service
from core.settings import Settings

LLM_KINDS = ("rule", "extract", "local", "llamacpp", "openai")

describe_need("llm", "a CNM backend (an LLM)")


def make_cnm_backend(kind: str, cache_dir: Path, embedder: Any = None,
                     **chat: Any) -> RuleCnm | ExtractCnm | PromptedCnm:
    """`RuleCnm` for "rule", `ExtractCnm` for "extract" (both without a model), otherwise CNM prompts over a
    cached chat client of that kind."""
    if kind == "rule":
        return RuleCnm(embedder=embedder)
    if kind == "extract":
        return ExtractCnm(embedder=embedder)
    if kind not in LLM_KINDS:
        raise ConfigError(f"unknown LLM backend '{kind}' (use {', '.join(LLM_KINDS)})")
    return PromptedCnm(make_chat_client(kind, cache_dir, **chat))


@register_service("llm")
def cnm_backend(settings: Settings, ws: Workspace, built: ChunkerContext, keys: KeyRing) -> Any:
    chat = {"model": settings.model_name or None, "base_url": settings.model_server_url or None,
            "api_key": keys.key_for(settings.model_server_url),
            "timeout": settings.model_timeout}
    return make_cnm_backend(settings.cnm_backend, ws.cache, embedder=built.embedder,
                            **({} if settings.cnm_backend in ("rule", "extract") else chat))
