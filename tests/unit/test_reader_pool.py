"""Reader workers are few and clean (core.ingest.reader_pool, core.ingest.worker): simultaneous reads never run
more 1 GB workers than the operator's pool, one client holds at most its share, a file that waits too long is
refused in one line, and a worker starts without the server's keys. Every count is of real child processes."""

from __future__ import annotations

import contextlib
import threading
import time

import psutil
import pytest

from core.infra.clients import client_scope
from core.infra.errors import ConfigError, DocumentError
from core.ingest import reader_pool
from core.ingest.reader_pool import ReaderPool
from core.ingest.worker import run_job
from core.server_config import load_server_config
from tests.support.pdfs import make_pdf

#: 1,000 pages: a few tenths of a second in a worker, long enough that simultaneous reads overlap
BOOK = make_pdf([f"Clean the filter every two weeks, page {i}." for i in range(1000)])


def _workers() -> list[psutil.Process]:
    """This process's live reader workers."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "core.ingest.worker" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.Error:
            pass
    return out


class Watch:
    """Counts live workers every few milliseconds while the block runs: the most seen at once."""

    def __enter__(self) -> Watch:
        self.most, self._done = 0, threading.Event()
        self._thread = threading.Thread(target=self._watch)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._done.is_set():
            self.most = max(self.most, len(_workers()))
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def _read_all(clients: list[str | None]) -> list[object]:
    """Read BOOK once per entry of `clients` at the same moment, each thread for its client; each outcome."""
    outcomes: list[object] = [None] * len(clients)
    start = threading.Barrier(len(clients))

    def read(i: int) -> None:
        with client_scope(clients[i]):
            start.wait()
            try:
                outcomes[i] = run_job("pdf_text", f"book{i}.pdf", BOOK, {"limits": {}})[0]
            except DocumentError as exc:
                outcomes[i] = exc

    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return outcomes


@pytest.fixture()
def pool(monkeypatch):
    """A fresh process pool of the default size for the test."""
    fresh = ReaderPool()
    monkeypatch.setattr(reader_pool, "POOL", fresh)
    return fresh


def test_five_simultaneous_reads_never_run_more_workers_than_the_pool(pool):
    assert pool.size == 2
    with Watch() as watch:
        outcomes = _read_all([None] * 5)
    assert all(isinstance(o, dict) and "page 999" in o["text"] for o in outcomes)  # every file was read
    assert watch.most == 2  # two at once, never five
    assert pool.alive() == 0 and not _workers()


def test_one_client_holds_at_most_its_share_of_the_readers(pool):
    pool.size = 4  # a client's share: 2
    with Watch() as watch:
        outcomes = _read_all(["203.0.113.7"] * 4)
    assert all(isinstance(o, dict) for o in outcomes)
    assert watch.most == 2  # four tabs of one visitor: two readers, the other two left for everyone else
    with Watch() as watch:
        _read_all(["203.0.113.7"] * 3 + ["198.51.100.4"] * 2)
    assert watch.most == 4


def test_a_file_that_waits_too_long_for_a_reader_is_refused_in_one_line(pool, monkeypatch):
    monkeypatch.setattr(reader_pool, "WAIT_SECONDS", 0.2)
    pool.size = 1
    shown: list[str] = []
    reader_pool.start_waiting_notice(shown.append)
    try:
        busy = (r"^late\.pdf: not read, every file reader it may use stayed busy for 0\.2 seconds \(this server runs 1 "
                r"at once, 1 for one visitor: reader_workers\); try again in a few minutes$")
        with pool.slot(), pytest.raises(DocumentError, match=busy):  # another visitor's file holds the only reader
            run_job("pdf_text", "late.pdf", BOOK, {"limits": {}})
        assert shown == ["late.pdf waits for a free file reader (this server runs 1 at once: reader_workers)"]
        assert not _workers()  # no process was started for it
        assert "page 0" in run_job("pdf_text", "late.pdf", BOOK, {"limits": {}})[0]["text"]  # free again: read
    finally:
        reader_pool.start_waiting_notice(None)


def test_a_worker_starts_without_the_servers_keys(monkeypatch):
    secrets = {"OPENAI_API_KEY": "sk-server-CANARY-77", "CHUNKLENS_MODEL_SERVER_URL": "http://user:pw@10.0.0.5/v1",
               "AWS_SECRET_ACCESS_KEY": "CANARY-aws", "HF_TOKEN": "hf_CANARY"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    seen: list[dict[str, str]] = []
    result: list[dict] = []
    reader = threading.Thread(target=lambda: result.append(run_job("pdf_text", "b.pdf", BOOK, {"limits": {}})[0]))
    reader.start()
    while reader.is_alive() and not seen:
        for worker in _workers():
            with contextlib.suppress(psutil.Error):
                seen.append(worker.environ())
    reader.join()
    assert seen, "the worker ended before its environment was read"
    environment = seen[0]
    assert not set(secrets) & set(environment)
    assert not any("CANARY" in value for value in environment.values())
    assert set(environment) <= {"PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "PYTHONPATH"} | {
        k for k in environment if k.startswith("LC_")}
    assert "page 999" in result[0]["text"]  # PDFium reads as before


def test_the_operator_sizes_the_pool(tmp_path):
    none = tmp_path / "none.toml"
    assert load_server_config(none, {}).reader_workers == 2
    assert load_server_config(none, {"CHUNKLENS_READER_WORKERS": "6"}).reader_workers == 6
    with pytest.raises(ConfigError, match="reader_workers"):
        load_server_config(none, {"CHUNKLENS_READER_WORKERS": "0"})
    reader_pool.configure(3)
    try:
        assert reader_pool.POOL.size == 3 and reader_pool.POOL.share == 1
    finally:
        reader_pool.configure(reader_pool.DEFAULT_READERS)
