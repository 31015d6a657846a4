"""The integration tests' shared server: llama.cpp's OpenAI-compatible server with the bundled SmolLM2, started once
for the integration tests (package scope: it stops after the last one) and shared by every test that only talks to
it. Tests that stop, kill or restart a server, or need one with other flags (embeddings), start their own
(tests.support.llm_server)."""

from __future__ import annotations

import pytest

from tests.support.llm_server import LlamaServer


@pytest.fixture(scope="package")
def llama(tmp_path_factory):
    server = LlamaServer(tmp_path_factory.mktemp("llama")).start()
    yield server
    server.stop(grace=10)
