"""The in-process llama.cpp backend with the bundled GGUF: every CNM answer is schema-valid JSON, answers are
cached, and a bad model file or a prompt over the context is one clear line."""

from __future__ import annotations

import pytest

from core.chunkers.base import token_window_chunks
from core.infra.errors import ConfigError
from core.ingest.datasets import load_dataset
from core.llm.base import ChatRequest
from core.llm.factory import make_chat_client
from core.methods.chop.cnm import CNM_SCHEMA, PROMPT_VERSION, PromptedCnm
from core.workbench import sample_folder

pytest.importorskip("llama_cpp", reason="llama-cpp-python comes with requirements-server.txt (the test setup)")


@pytest.mark.slow
def test_every_window_of_a_sample_manual_gets_a_schema_valid_cnm(tmp_path):
    doc = min(load_dataset(sample_folder()).documents, key=lambda d: len(d.text))
    windows = [c.text for c in token_window_chunks(doc, 500, 100)]
    client = make_chat_client("llamacpp", tmp_path)
    results = PromptedCnm(client).extract(windows)
    assert len(results) == len(windows) > 5
    props = CNM_SCHEMA["properties"]
    for r in results:
        assert r.error is None and not r.failed, r.raw
        tag = r.cnm
        assert tag.category is None or len(tag.category) <= props["category"]["anyOf"][0]["maxLength"]
        assert tag.model is None or len(tag.model) <= props["model"]["anyOf"][0]["maxLength"]
        assert len(tag.nouns) <= props["nouns"]["maxItems"]
    assert client.stats.calls == len(windows) and client.stats.errors == 0
    again = make_chat_client("llamacpp", tmp_path)
    PromptedCnm(again).extract(windows)
    assert again.stats.calls == 0 and again.stats.cached == len(windows)  # all from the answer cache


def test_a_prompt_over_the_context_is_an_answer_with_one_line_of_error(tmp_path):
    client = make_chat_client("llamacpp", tmp_path)
    answer = client.ask(ChatRequest("word " * 5000, max_tokens=8))
    assert answer.error and answer.error.startswith("llama.cpp:") and "\n" not in answer.error
    assert client.stats.errors == 1 and client.ask(ChatRequest("word " * 5000, max_tokens=8)).error  # not cached


def test_a_model_file_that_is_not_a_gguf_is_a_config_error(tmp_path):
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"nothing here")
    client = make_chat_client("llamacpp", tmp_path, model=str(bad))
    with pytest.raises(ConfigError, match="cannot load GGUF model"):
        client.ask(ChatRequest("hello", max_tokens=4))


def test_the_setting_and_the_flag_name_the_backend(tmp_path):
    from core.cli.flags import build_parser, settings_from_flags
    from core.llm.llamacpp_backend import LlamaCppChat
    from core.services import build_services

    args = build_parser().parse_args(["bench", "--data", "x", "--chunkers", "chop,lumber", "--cnm-backend", "llamacpp",
                                      "--workspace", str(tmp_path)])
    services = build_services(settings_from_flags(args), needs={"llm", "chat"})
    assert isinstance(services.get("llm"), PromptedCnm) and isinstance(services.get("llm").client.backend, LlamaCppChat)
    assert isinstance(services.chat.backend, LlamaCppChat)  # lumber and answers use it too
    assert services.get("llm").key.startswith(f"prompted:v{PROMPT_VERSION}:llamacpp:")
