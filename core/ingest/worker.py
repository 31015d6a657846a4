"""Untrusted files are parsed in a short-lived worker process, never in the server's own.

PDFium and lxml are C code fed by strangers' bytes. A few KB of PDF can make PDFium build millions of objects and
abort the whole process (SIGABRT) when memory runs out; a small DOCX can inflate into minutes of XML parsing.
In a shared server that process is every visitor's, so one file must cost at most one worker:

- the worker caps its own address space (RLIMIT_AS) before it reads a byte, so a bomb ends in that worker with a
  MemoryError or an abort, and the server reports one line about the file;
- the parent kills the worker when the job's wall-clock limit passes, whatever C loop it is stuck in;
- each worker has its own PDFium, so uploads no longer queue behind one process-wide lock;
- workers are few: each takes a slot of the process's reader pool first (core.ingest.reader_pool: the operator's
  `reader_workers`, and a share per client), so simultaneous uploads wait for a reader instead of each starting
  a 1 GB process;
- a worker gets a minimal environment (`worker_environment`): what Python, PDFium and the locale need, never the
  server's keys (`OPENAI_API_KEY`) or settings, which code that reads hostile input has no use for.

The protocol is deliberately dull: one JSON header line and the file's bytes on stdin; one JSON line (and, for a
rendered page, the PNG after it) on stdout. Nothing is unpickled from the worker, which reads hostile input. A job
names a function from `JOBS`, which runs in the worker exactly as it would in-process.

Start-up costs about 0.15 s (Python and pypdfium2's import), small beside reading any real PDF.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from core.infra.errors import DocumentError
from core.infra.jsonio import JsonObject
from core.ingest import reader_pool

if TYPE_CHECKING:
    from core.ingest.answers import DocxTextAnswer, PagesAnswer, PdfTextAnswer

#: What one file may cost its worker. PDFium holds a page's objects at a time; 1 GB of address space is several
#: times what the largest real manual needs (a 2,000-page PDF reads in about 300 MB) and a fraction of a server.
MAX_WORKER_MEMORY = 1024 * 2**20
#: Wall-clock seconds beyond a job's own time limit for the worker's start-up and its answer.
START_UP_SECONDS = 20.0

#: The jobs a worker may run: name -> "module:function". The function takes (name, data, options) and returns a
#: JSON object of its own shape (a TypedDict beside it: `run_job`'s overloads name each job's), and optionally
#: bytes as a second value.
JOBS = {
    "pdf_text": "core.ingest.documents:pdf_text_job",
    "docx_text": "core.ingest.documents:docx_text_job",
    "pdf_page": "core.ingest.pdf:page_job",
}

_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the `core` package
#: the server's environment variables a worker keeps: where programs and temporary files are, the locale, and
#: Python's own search path; every other variable (keys, tokens, the operator's settings) stays behind
_KEPT_ENVIRONMENT = ("PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
                     "SYSTEMROOT")


class ReaderFailure(Exception):
    """The library exception a worker's DocumentError stood on (its `__cause__` in the worker), by name: the worker
    does not send exceptions back, only their class's qualified name (`kind`) and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@dataclass(frozen=True)
class WorkerLimits:
    """What a job may cost: address space in bytes, and wall-clock seconds from start to answer."""

    memory: int = MAX_WORKER_MEMORY
    seconds: float = 120.0 + START_UP_SECONDS


@overload
def run_job(job: Literal["pdf_text"], name: str, data: bytes, options: JsonObject | None = None,
            limits: WorkerLimits | None = None) -> tuple[PdfTextAnswer, bytes]: ...


@overload
def run_job(job: Literal["docx_text"], name: str, data: bytes, options: JsonObject | None = None,
            limits: WorkerLimits | None = None) -> tuple[DocxTextAnswer, bytes]: ...


@overload
def run_job(job: Literal["pdf_page"], name: str, data: bytes, options: JsonObject | None = None,
            limits: WorkerLimits | None = None) -> tuple[PagesAnswer, bytes]: ...


def run_job(job: str, name: str, data: bytes, options: JsonObject | None = None,
            limits: WorkerLimits | None = None) -> tuple[Mapping[str, object], bytes]:
    """Run `job` on the file `name` (its bytes `data`) in a fresh worker process: (its result, its bytes).

    The result is typed by the job's overload: a worker that answers without an error ran that job's function, and
    the answer is what the function returned, through JSON (which its answer type allows for: a tuple comes back
    as a list).

    Every failure is a DocumentError of one line naming the file: the job's own refusals as they were raised,
    and the worker's end when it ran out of memory, crashed or passed its time limit."""
    if job not in JOBS:
        raise ValueError(f"unknown worker job {job!r}")
    limits = limits or WorkerLimits()
    header = json.dumps({"job": job, "name": name, "options": options or {}, "memory": limits.memory})
    notice = reader_pool.waiting_notice()
    pool = reader_pool.POOL
    try:
        with pool.slot(on_wait=(lambda: notice(f"{name} waits for a free file reader (this server runs {pool.size} "
                                               "at once: reader_workers)")) if notice else None):
            return _run(name, header.encode() + b"\n" + data, limits)
    except reader_pool.ReadersBusy:
        raise DocumentError(f"{name}: not read, every file reader it may use stayed busy for "
                            f"{reader_pool.WAIT_SECONDS:g} seconds (this server runs {pool.size} at once, {pool.share} "
                            "for one visitor: reader_workers); try again in a few minutes") from None


def worker_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a worker starts with: `_KEPT_ENVIRONMENT` of `environ` (the server's) and a PYTHONPATH that
    finds `core`."""
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in environ.items() if k in _KEPT_ENVIRONMENT or k.startswith("LC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), environ.get("PYTHONPATH")]))
    return env


def _run(name: str, request: bytes, limits: WorkerLimits) -> tuple[JsonObject, bytes]:
    """Start one worker, hand it `request` (header line and file), and read its answer."""
    env = worker_environment()
    with subprocess.Popen([sys.executable, "-m", "core.ingest.worker"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=_ROOT) as proc:
        try:
            out, err = proc.communicate(request, timeout=limits.seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise DocumentError(f"{name}: reading it passed the {limits.seconds:g}-second limit for one file, so it "
                                "was stopped") from None
    return _answer(name, proc.returncode, out, err, limits)


def _answer(name: str, code: int, out: bytes, err: bytes, limits: WorkerLimits) -> tuple[JsonObject, bytes]:
    """The worker's result, or the DocumentError its answer or its end stands for."""
    head, _, payload = out.partition(b"\n")
    try:
        result = json.loads(head) if head else None
    except ValueError:
        result = None
    if isinstance(result, dict) and "error" in result:
        cause = result.get("cause")
        raise DocumentError(str(result["error"])) from (ReaderFailure(*cause) if cause else None)
    if code == 0 and isinstance(result, dict):
        return result, payload
    memory = f"{limits.memory / 2**20:.0f} MB"
    if code < 0 and -code in (signal.SIGABRT, signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS):
        raise DocumentError(f"{name}: reading it needed more than the {memory} memory limit for one file, so it was "
                            f"stopped (signal {signal.Signals(-code).name}; does it draw nested forms or huge "
                            "images?)")
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {code}"]
    raise DocumentError(f"{name}: the file reader stopped on it ({last[0][:120]})")


def _cap_memory(limit: int) -> None:
    """Hold this process to `limit` bytes of address space, and write no core file when it aborts."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _serve() -> int:
    """The worker's side: read the job, run it under the memory cap, answer on stdout."""
    stdin = sys.stdin.buffer
    request = json.loads(stdin.readline())
    _cap_memory(int(request["memory"]))
    name = str(request["name"])
    data = stdin.read()
    module, _, function = JOBS[request["job"]].partition(":")
    try:
        answer = getattr(importlib.import_module(module), function)(name, data, request["options"])
    except DocumentError as exc:
        answer = {"error": str(exc)}
        if (cause := exc.__cause__) is not None:
            answer["cause"] = [f"{type(cause).__module__}.{type(cause).__qualname__}", str(cause)[:500]]
    except MemoryError:
        answer = {"error": f"{name}: reading it needed more than the {int(request['memory']) / 2**20:.0f} MB memory "
                           "limit for one file, so it was stopped"}
    result, payload = answer if isinstance(answer, tuple) else (answer, b"")
    sys.stdout.buffer.write(json.dumps(result).encode() + b"\n" + payload)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
