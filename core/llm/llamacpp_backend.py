"""The bundled SmolLM2 GGUF run in-process by llama.cpp (llama-cpp-python), with JSON-schema-constrained output.

Why: the transformers path answers CNM requests in prose (a 135M model does not follow "answer in JSON"), so no
tag parses. llama.cpp turns a request's `json_schema` into a grammar, so every answer parses, and it loads the
quantised file directly (well under a second) instead of de-quantising it first. One request at a time: the
model is not thread-safe and the CPU is the limit anyway. It is the `llamacpp` kind of `--llm` and of the app's
CNM backend setting; llama-cpp-python comes with the test setup (requirements-server.txt).
"""

from __future__ import annotations

import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.infra.errors import ConfigError
from core.infra.jsonio import JsonObject
from core.llm.base import ChatAnswer, ChatRequest, LLMError
from core.llm.local_model import bundled_gguf

N_CTX = 2048


@lru_cache(maxsize=4)
def load_llama(model_path: str, n_ctx: int, n_threads: int, n_batch: int = 512) -> Any:
    """One llama.cpp model per (file, context, threads, batch) in the process: the chat backend's, and LGMGC's
    scorer's, which evaluates a whole window in one batch."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ConfigError("the llamacpp engine needs llama-cpp-python "
                          "(pip install -r requirements-server.txt)") from exc
    try:
        return Llama(model_path=model_path, n_ctx=n_ctx, n_batch=n_batch, n_threads=n_threads, verbose=False)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot load GGUF model '{model_path}': {exc}") from exc


class LlamaCppChat:
    """Greedy chat completions from a GGUF file; a request's `json_schema` constrains the answer to it."""

    max_concurrency = 1

    def __init__(self, model: str | None = None, n_ctx: int = N_CTX, n_threads: int = 2) -> None:
        self.model_path = str(Path(model) if model else bundled_gguf())
        self.n_ctx, self.n_threads = n_ctx, n_threads
        name = "SmolLM2-135M-Instruct" if model is None else Path(self.model_path).name
        self.key = f"llamacpp:{Path(self.model_path).name}:ctx{n_ctx}"
        self.label = f"{name} (llama.cpp, in-process)"
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> ChatAnswer:
        llama = load_llama(self.model_path, self.n_ctx, self.n_threads)
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + [
            {"role": "user", "content": request.prompt}]
        extra: JsonObject = {}
        if request.json_schema:
            extra["response_format"] = {"type": "json_object", "schema": request.json_schema}
        started = time.perf_counter()
        try:
            with self._lock:
                out = llama.create_chat_completion(messages=messages, temperature=request.temperature,
                                                   max_tokens=request.max_tokens, **extra)
        except (ValueError, RuntimeError) as exc:  # a prompt over the context, a grammar llama.cpp refuses
            raise LLMError(f"llama.cpp: {str(exc).splitlines()[0][:200]}") from exc
        usage = out.get("usage") or {}
        text = out["choices"][0]["message"].get("content") or ""
        return ChatAnswer(text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                          time.perf_counter() - started)
