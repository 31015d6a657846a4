"""A real OpenAI-compatible server on loopback for tests: llama-cpp-python's, serving the bundled GGUF."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.local_servers import ChildServer, free_port


class LlamaServer(ChildServer):
    """With `embedding`, the server also answers /v1/embeddings (the GGUF's pooled hidden states)."""

    def __init__(self, log_dir: Path, port: int | None = None, embedding: bool = False) -> None:
        from core.llm.local_model import bundled_gguf

        port = port or free_port()
        self.gguf = bundled_gguf()
        super().__init__([sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias",
                          "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads",
                          "2", *(["--embedding", "true"] if embedding else [])],
                         port, "/v1/models", "llama.cpp server", log_path=log_dir / f"llama-server-{port}.log",
                         timeout=120.0)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


@contextlib.contextmanager
def llama_server(log_dir: Path, embedding: bool = False) -> Iterator[LlamaServer]:
    server = LlamaServer(log_dir, embedding=embedding).start()
    try:
        yield server
    finally:
        server.stop(grace=10)
