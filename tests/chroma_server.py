"""Start a real `chroma run` server on loopback for a test, and stop it afterwards."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.local_servers import ChildServer, free_port, wait_for_http

__all__ = ["ChromaServer", "chroma_server", "free_port", "wait_for_http"]


class ChromaServer(ChildServer):
    """A `chroma run` child process on a fixed port and folder, so a test can kill it and start it again
    where clients expect it."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        port = port or free_port()
        exe = Path(sys.executable).parent / "chroma"
        super().__init__([str(exe), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)], port,
                         "/api/v2/heartbeat", "chroma server", log_path=path.parent / f"chroma-server-{port}.log")
        self.path = path


@contextlib.contextmanager
def chroma_server(path: Path, timeout: float = 60.0) -> Iterator[int]:
    server = ChromaServer(path).start(timeout)
    try:
        yield server.port
    finally:
        server.stop(grace=10)
