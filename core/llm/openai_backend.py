"""Chat over the OpenAI HTTP API, or any OpenAI-compatible server (Ollama, vLLM, llama.cpp's server).

Retries with exponential backoff (honouring Retry-After) and the timeout are the `openai` client's own: it
retries timeouts, dropped connections, HTTP 429 and 5xx. What is left after the retries, and replies that are
not chat completions at all, become an `LLMError` with one line saying what failed and what to do; the
client turns that into an answer with `error` set, which is never cached, so a rerun asks again. The API key
comes from the app session or OPENAI_API_KEY; it is never logged, printed, part of a cache key, or carried in an
error: a server's error body may quote it, so status errors are not chained and their text is redacted
(tests/test_secrets.py). A password in the base URL (`http://user:pass@host/v1`) goes only to the client: key,
label, repr and error lines show the address through `core.infra.urls.redact_url`.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from core.infra.errors import ConfigError
from core.infra.urls import redact_url
from core.llm.base import ChatAnswer, ChatRequest, LLMError

if TYPE_CHECKING:  # openai itself is imported when a client is made
    from openai.types.chat import ChatCompletionMessageParam


class OpenAICompatibleChat:
    #: every request may cost the key's owner money: a shared server's runs are charged for it (core.llm.budget)
    paid = True

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, timeout: float = 60.0,
                 max_retries: int = 3, max_concurrency: int = 4, json_mode: str | None = None) -> None:
        import openai

        key = api_key  # never read from the environment here: core.infra.keys decides which key may go to base_url
        if not key and not (base_url or os.environ.get("OPENAI_BASE_URL")):
            raise ConfigError("the OpenAI backend needs an API key (OPENAI_API_KEY or the settings) or a base URL")
        if not model:
            raise ConfigError("the OpenAI backend needs a model name")
        self._openai = openai
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=base_url, timeout=timeout,
                                    max_retries=max_retries)
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        # "object": JSON mode only (api.openai.com); "object+schema": also send the schema (llama.cpp's server
        # constrains output with it); "off": plain text, the answer parser copes
        self.json_mode = json_mode or ("object" if base_url is None else "object+schema")
        if self.json_mode not in ("object", "object+schema", "off"):
            raise ConfigError(f"json_mode must be object, object+schema or off, not {self.json_mode!r}")
        where = redact_url(base_url) if base_url else "api.openai.com"  # the client alone keeps any credentials
        self.key = f"openai:{where}:{model}"
        self.label = f"{model} via {where}"

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleChat(model={self.model!r}, base_url={redact_url(str(self.client.base_url))!r})"

    def chat(self, request: ChatRequest) -> ChatAnswer:
        messages: list[ChatCompletionMessageParam] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
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
        except self._openai.APIStatusError as exc:
            # not chained: the server's error body can quote the key (some echo it in full), and a chained
            # cause would carry it into any traceback that gets logged or shown
            raise LLMError(f"{self.label}: {self._explain(exc)}") from None
        except self._openai.APIError as exc:
            raise LLMError(f"{self.label}: {self._explain(exc)}") from exc
        except ValueError as exc:  # a 200 whose body is not JSON (a proxy's HTML page, a truncated reply)
            raise LLMError(f"{self.label}: the reply is not JSON; {_NOT_A_CHAT_API}") from exc
        choices = getattr(resp, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:  # the client does not validate: a JSON reply without choices arrives as an object
            raise LLMError(f"{self.label}: the reply has no chat completion in it; {_NOT_A_CHAT_API}")
        usage = getattr(resp, "usage", None)
        return ChatAnswer(message.content or "", getattr(usage, "prompt_tokens", 0) or 0,
                          getattr(usage, "completion_tokens", 0) or 0, time.perf_counter() - started)

    def _explain(self, exc: Exception) -> str:
        return explain_openai_error(exc, self.client, "LLM timeout")


def explain_openai_error(exc: Exception, client: Any, timeout_setting: str) -> str:
    """One line a user can act on, for each way the openai client gives up (after its own retries); the key is
    redacted from anything the server said. Shared by the chat backend and the OpenAI embedder."""
    import openai

    tries = f"{client.max_retries} retries"
    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {client.timeout:g} s ({tries}); check the server or raise the {timeout_setting}"
    if isinstance(exc, openai.APIConnectionError):
        return (f"cannot connect, or the server dropped the connection ({tries}); check that it is running "
                f"at {redact_url(str(client.base_url))}")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code == 429:
            return f"rate limited (HTTP 429, {tries}); wait a minute and rerun, or lower the concurrency"
        if code >= 500:
            return f"server error (HTTP {code}, {tries}); see the server's log, then rerun"
        said = _first_line(exc.message)
        if client.api_key:
            said = said.replace(client.api_key, "***")
        return f"HTTP {code} ({said}); check the model name, base URL and API key"
    return f"{exc.__class__.__name__}: {_first_line(str(exc))}"


_NOT_A_CHAT_API = "check that the base URL points at an OpenAI-compatible /v1 API"


def _first_line(text: str, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line[:limit]
