"""Building the chat client a setting names: "local" (the bundled model through transformers), "llamacpp" (the
bundled GGUF in-process, JSON-constrained) or "openai" (any OpenAI-compatible server), each behind the
persistent answer cache."""

from __future__ import annotations

import os
from pathlib import Path

from core.infra.errors import ConfigError
from core.llm.base import AnswerCache, LLMClient


def make_chat_client(kind: str, cache_dir: Path, model: str | None = None, base_url: str | None = None,
                     api_key: str | None = None, timeout: float = 60.0, max_retries: int = 3,
                     max_concurrency: int = 4) -> LLMClient:
    cache = AnswerCache(cache_dir / "llm_answers.sqlite")
    if kind == "local":
        from core.llm.local_model import BUNDLED_SMOLLM2, TransformersChat

        return LLMClient(TransformersChat(model or BUNDLED_SMOLLM2, cache_dir / "models"), cache)
    if kind == "llamacpp":
        from core.llm.llamacpp_backend import LlamaCppChat

        return LLMClient(LlamaCppChat(model), cache)
    if kind == "openai":
        from core.llm.openai_backend import OpenAICompatibleChat

        model = model or os.environ.get("CHUNKLENS_OPENAI_MODEL") or "gpt-4o-mini"
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        return LLMClient(OpenAICompatibleChat(model, base_url, api_key, timeout, max_retries, max_concurrency), cache)
    raise ConfigError(f"no chat backend '{kind}' (use local, llamacpp or openai)")
