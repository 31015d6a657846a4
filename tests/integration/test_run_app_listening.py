"""Who can reach the app (docs/SECURITY.md): `scripts/run-app.sh`, run as a child process, listens on loopback only,
and on every interface with `--expose` (the sessions of a shared server: tests/app/test_shared_server.py)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time

import psutil
import pytest

from bench.local_servers import free_port
from core.store.onnx_embedder import default_model_folder
from tests.support.data import ROOT


def _listening(pid: int, port: int) -> set[str]:
    """The addresses on which `pid` or one of its children listens on `port`. The script's short-lived children
    (the interpreter checks it runs before Streamlit) can end between being listed and being read: they are
    skipped, not an error."""
    addresses: set[str] = set()
    procs: list[psutil.Process] = []
    with contextlib.suppress(psutil.NoSuchProcess):
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            addresses |= {c.laddr.ip for c in proc.net_connections("tcp")
                          if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    return addresses


@pytest.mark.parametrize("flags, expected", [([], {"127.0.0.1"}), (["--expose"], {"0.0.0.0"})])
def test_run_app_listens_on_loopback_unless_exposed(tmp_path, flags, expected):
    port = free_port()
    # a fresh home, but the machine's model folder: the set-up's one-time work (the ONNX export, the sample set's
    # vectors) is done there already, and this test is about the addresses the app listens on
    env = {"CHUNKLENS_WORKSPACE": str(tmp_path / "ws"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "CHUNKLENS_MODEL_CACHE": str(default_model_folder())}
    proc = subprocess.Popen(["bash", "scripts/run-app.sh", *flags, "--server.port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _listening(proc.pid, port) and time.monotonic() < deadline:
            assert proc.poll() is None, "run-app.sh stopped"
            time.sleep(0.5)
        assert _listening(proc.pid, port) == expected
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        proc.terminate()
        proc.wait(timeout=30)
