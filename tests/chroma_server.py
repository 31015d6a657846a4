"""Start a real `chroma run` server on loopback for a test, and stop it afterwards."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, timeout: float, what: str) -> None:
    """Poll `url` until it answers; fail early if the process died."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.2)


@contextlib.contextmanager
def chroma_server(path: Path, timeout: float = 60.0) -> Iterator[int]:
    port = free_port()
    exe = Path(sys.executable).parent / "chroma"
    log = (path.parent / "chroma-server.log").open("w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc, timeout, f"chroma server (see {log.name})")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
