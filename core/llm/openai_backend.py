"""Chat over the OpenAI HTTP API, or any OpenAI-compatible server (Ollama, vLLM, llama.cpp's server).

Retries with exponential backoff and the timeout are the `openai` client's own. The API key comes from the
app session or OPENAI_API_KEY; it is never logged, printed, part of a cache key, or carried in an error
(tests/test_secrets.py).
"""

from __future__ import annotations

import os
import time

from core.errors import ConfigError
from core.llm.base import ChatAnswer, ChatRequest, LLMError


class OpenAICompatibleChat:
    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, timeout: float = 60.0,
                 max_retries: int = 3, max_concurrency: int = 4, json_mode: str | None = None) -> None:
        import openai

        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and not base_url:
            raise ConfigError("the OpenAI backend needs an API key (OPENAI_API_KEY or the settings) or a base URL")
        if not model:
            raise ConfigError("the OpenAI backend needs a model name")
        self._openai = openai
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=base_url, timeout=timeout,
                                    max_retries=max_retries)
        self.model = model
        self.max_concurrency = max_concurrency
        # "object": JSON mode only (api.openai.com); "object+schema": also send the schema (llama.cpp's server
        # constrains output with it); "off": plain text, the answer parser copes
        self.json_mode = json_mode or ("object" if base_url is None else "object+schema")
        if self.json_mode not in ("object", "object+schema", "off"):
            raise ConfigError(f"json_mode must be object, object+schema or off, not {self.json_mode!r}")
        where = base_url or "api.openai.com"
        self.key = f"openai:{where}:{model}"
        self.label = f"{model} via {where}"

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleChat(model={self.model!r}, base_url={str(self.client.base_url)!r})"

    def chat(self, request: ChatRequest) -> ChatAnswer:
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + [
            {"role": "user", "content": request.prompt}]
        extra: dict = {}
        if request.json_schema is not None and self.json_mode != "off":
            extra["response_format"] = {"type": "json_object"}
            if self.json_mode == "object+schema":
                extra["response_format"]["schema"] = request.json_schema
        started = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=messages, temperature=request.temperature,
                max_tokens=request.max_tokens, **extra,
            )
        except self._openai.APITimeoutError as exc:
            raise LLMError(f"{self.label}: timed out after retries") from exc
        except self._openai.APIConnectionError as exc:
            raise LLMError(f"{self.label}: cannot connect ({exc.__class__.__name__})") from exc
        except self._openai.APIStatusError as exc:
            # not chained: the server's error body can quote the key (some echo it in full), and a chained
            # cause would carry it into any traceback that gets logged or shown
            raise LLMError(f"{self.label}: HTTP {exc.status_code}") from None
        text = resp.choices[0].message.content or "" if resp.choices else ""
        usage = resp.usage
        return ChatAnswer(text, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
                          time.perf_counter() - started)
