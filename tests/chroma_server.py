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


class ChromaServer:
    """A `chroma run` child process on a fixed port and folder, so a test can kill it and start it again
    where clients expect it."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = path.parent / f"chroma-server-{self.port}.log"

    def start(self, timeout: float = 60.0) -> ChromaServer:
        exe = Path(sys.executable).parent / "chroma"
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(
                [str(exe), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT)
        wait_for_http(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", self.proc, timeout,
                      f"chroma server (see {self.log_path})")
        return self

    def kill(self) -> None:
        """SIGKILL: the server gets no chance to finish anything, like a crash or a pulled plug."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextlib.contextmanager
def chroma_server(path: Path, timeout: float = 60.0) -> Iterator[int]:
    server = ChromaServer(path).start(timeout)
    try:
        yield server.port
    finally:
        server.stop()
