"""Servers started as child processes on loopback: the app (`streamlit run app.py`) and the real services the tests
and benchmarks run against (a `chroma run` server, `ChromaServer`; llama.cpp's OpenAI-compatible server, the fault
server, `FaultServer`); and the Debian chromium that the browser tests and benchmarks drive the app with (`CHROMIUM`,
`CHROMIUM_ARGS`).

The tests, `bench.load`, `bench.scale` and `scripts/bench_app.py` all need the same three steps (pick a free port,
start the process with its output in a log, wait until an HTTP path answers, then stop it, politely or with
SIGKILL), so they live here once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from bench.fault_server import FAULTS
from core.infra.errors import ChunkLensError

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: headless on a CI box as root: no sandbox, no GPU, nothing fetched in the background
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


class ServerStartError(ChunkLensError):
    """A child server exited, or did not answer in time."""


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
                raise ServerStartError(f"{what} did not start") from None
            time.sleep(0.2)


class ChildServer:
    """One server process on 127.0.0.1:`port`. `start` returns once `health_path` answers (and records how long
    that took); `stop` asks it to end, `kill` is SIGKILL (a crash or a pulled plug). Usable as a context manager."""

    def __init__(self, cmd: list[str], port: int, health_path: str, what: str, log_path: Path | None = None,
                 env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 60.0) -> None:
        self.cmd, self.port, self.health_path, self.what = cmd, port, health_path, what
        self.log_path, self.env, self.cwd, self.timeout = log_path, env, cwd, timeout
        self.proc: subprocess.Popen | None = None
        self.start_seconds = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float | None = None) -> Self:
        t0 = time.perf_counter()
        if self.log_path is None:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        else:
            with self.log_path.open("a") as log:
                self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=log,
                                             stderr=subprocess.STDOUT)
        where = f" (see {self.log_path})" if self.log_path else ""
        try:
            wait_for_http(self.url + self.health_path, self.proc, timeout or self.timeout, self.what + where)
        except BaseException:
            self.kill()
            raise
        self.start_seconds = time.perf_counter() - t0
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait(timeout=10)

    def stop(self, grace: float = 20.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ChildServer:
        return self if self.proc else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ChromaServer(ChildServer):
    """A `chroma run` child process serving the folder `path` on a fixed port (a free one unless given), its log
    beside that folder, so a test can kill it and start it again where clients expect it."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        port = port or free_port()
        exe = Path(sys.executable).parent / "chroma"
        super().__init__([str(exe), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)], port,
                         "/api/v2/heartbeat", "chroma server", log_path=path.parent / f"chroma-server-{port}.log")
        self.path = path


class FaultServer(ChildServer):
    """The fault server (bench/fault_server.py: an OpenAI-compatible chat server that misbehaves on cue) as a child
    process; `script` sets the faults it plays next, `start` waits until it answers, `kill` is SIGKILL."""

    def __init__(self, port: int | None = None, exit_after: int | None = None, delay: float = 0.0) -> None:
        port = port or free_port()
        cmd = [sys.executable, "-m", "bench.fault_server", "--port", str(port), "--delay", str(delay)]
        if exit_after is not None:
            cmd += ["--exit-after", str(exit_after)]
        super().__init__(cmd, port, "/v1/models", "fault server", timeout=20.0)
        self.exit_after = exit_after
        self.delay = delay

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _call(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def script(self, faults: Sequence[str] = (), default: str = "ok", retry_after: int = 1) -> None:
        unknown = set(faults) - set(FAULTS) | ({default} - set(FAULTS))
        assert not unknown, f"unknown faults {unknown}"
        self._call("/_plan", {"faults": list(faults), "default": default, "retry_after": retry_after})

    def stats(self) -> dict[str, Any]:
        return self._call("/_stats")

    def requests(self) -> int:
        """Chat requests served since the last `script` (every fault counts, retries too)."""
        return sum(self.stats()["served"].values())

    def wait_dead(self, timeout: float = 30.0) -> None:
        assert self.proc is not None
        self.proc.wait(timeout=timeout)


def streamlit_app(workspace: Path, port: int | None = None, log_path: Path | None = None) -> ChildServer:
    """The app as `scripts/run-app.sh` serves it (from the project folder, so .streamlit/config.toml applies),
    headless on loopback, with its workspace at `workspace` and nothing fetched from the Hugging Face hub."""
    port = port or free_port()
    env = {**os.environ, "CHUNKLENS_WORKSPACE": str(workspace), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
           "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    return ChildServer(cmd, port, "/_stcore/health", "streamlit", log_path=log_path, env=env, timeout=120.0)
