"""A real OpenAI-compatible server on loopback for tests: llama-cpp-python's, serving the bundled GGUF."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.chroma_server import free_port, wait_for_http


class LlamaServer:
    def __init__(self, log_dir: Path, port: int | None = None) -> None:
        from core.llm.local_model import bundled_gguf

        self.port = port or free_port()
        self.gguf = bundled_gguf()
        self.log_path = log_dir / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LlamaServer:
        log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", "smollm2",
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048", "--n_threads", "2"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        wait_for_http(f"{self.base_url}/models", self.proc, timeout, f"llama.cpp server (see {self.log_path})")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def llama_server(log_dir: Path) -> Iterator[LlamaServer]:
    server = LlamaServer(log_dir).start()
    try:
        yield server
    finally:
        server.stop()
