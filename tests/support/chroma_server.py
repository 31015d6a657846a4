"""Start a real `chroma run` server on loopback for a test, and stop it afterwards. `ChromaServer` itself lives in
bench.local_servers (the benchmarks start the same server)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from bench.local_servers import ChromaServer


@contextlib.contextmanager
def chroma_server(path: Path, timeout: float = 60.0) -> Iterator[int]:
    server = ChromaServer(path).start(timeout)
    try:
        yield server.port
    finally:
        server.stop(grace=10)
