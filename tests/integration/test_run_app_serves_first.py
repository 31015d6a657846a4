"""Serve first: `scripts/run-app.sh` on a machine without the sample vectors answers its health check and says where
it listens while `python -m core warm` still computes them in the background, and stopping the server stops the
warm-up too (nothing half-made is published, its scratch workspace is removed)."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
import urllib.request

from bench.local_servers import free_port
from core.store.onnx_embedder import default_model_folder
from core.store.warm_up import running
from tests.support.data import ROOT

#: seconds for the script to say it listens: the set-up is done (a few seconds) and Streamlit starts (a few more,
#: under load); the sample vectors take minutes on 2 cores, so on the old order this never came in time
LISTENING_WITHIN = 120


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line.rstrip("\n"))
    into.put(None)


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_run_app_listens_before_the_sample_vectors_are_done_and_stops_the_warm_up_with_it(tmp_path):
    port = free_port()
    vectors, scratch = tmp_path / "machine", tmp_path / "tmp"
    vectors.mkdir()
    scratch.mkdir()
    # an empty location for the machine's sample vectors; the machine's ONNX model (built by the set-up)
    env = {"CHUNKLENS_WORKSPACE": str(tmp_path / "ws"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "CHUNKLENS_MODEL_CACHE": str(default_model_folder()), "CHUNKLENS_MACHINE_VECTORS": str(vectors),
           "TMPDIR": str(scratch), "CHUNKLENS_WARM_LOG": str(tmp_path / "warm.log")}
    started = time.monotonic()
    proc = subprocess.Popen(["bash", "scripts/run-app.sh", "--server.port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    seen: list[str] = []
    warm_pid = None
    try:
        while not any(line.startswith("The sample vectors") for line in seen):
            line = lines.get(timeout=max(0.1, started + LISTENING_WITHIN - time.monotonic()))
            assert line is not None, "run-app.sh ended:\n" + "\n".join(seen)
            seen.append(line)
        assert f"ChunkLens is listening on http://127.0.0.1:{port}" in seen, seen
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as answer:
            assert answer.status == 200
        background = next(line for line in seen if line.startswith("The sample vectors"))
        warm_pid = int(re.search(r"process (\d+)", background).group(1))
        log = tmp_path / "warm.log"
        assert f"log: {log})" in background
        assert not list(vectors.glob("*.sqlite")), "the warm-up was done before the app listened"
        # the warm-up, loading its model when the app answered, takes the machine file's lock and computes
        deadline = time.monotonic() + LISTENING_WITHIN
        while not (locks := list(vectors.glob("sample-vectors-*.sqlite.lock"))) and time.monotonic() < deadline:
            assert not _ended(warm_pid), log.read_text()
            time.sleep(0.2)
        [lock] = locks
        target = lock.with_name(lock.name.removesuffix(".lock"))
        while not running(target) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert running(target) and not target.exists(), log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    # the server stopped (SIGTERM to it alone, as a service manager sends): the warm-up notices and ends
    deadline = time.monotonic() + 30
    while not _ended(warm_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ended(warm_pid), "the warm-up outlived the server"
    assert proc.returncode == 0
    assert not running(target) and not target.exists()
    assert not list(scratch.glob("chunklens-warm-*")), "the warm-up's scratch workspace was left behind"
    assert f"process {proc.pid} has ended: the warm-up stops" in log.read_text()
