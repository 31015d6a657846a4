"""A shared server counts a visitor's paid requests per client address, not per library (issue 50): `?lib=` ids are
free to mint, so a visitor who opens a second library gets no second hour. Real app sessions through AppTest and
a real chat server on loopback that counts what it is asked; AppTest has no connection, so each session's
connection (components.clients.connection) is the one a real server keeps for a visitor at 203.0.113.7."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from components import clients
from core.llm import budget
from core.llm.budget import HourlyLedger
from tests.app.test_shared_server import ChatRecorder, Recorder
from tests.support.appflow import click
from tests.support.data import ROOT

TEXT = b"\n\n".join(b"Clean the fan blades of the Breeze 200 every month with a dry cloth, section %d." % i
                    for i in range(60))


@pytest.fixture()
def chat():
    server = ChatRecorder()
    yield server
    server.httpd.shutdown()


def _run_chop_in(monkeypatch, ws, lib: str) -> list[str]:
    """Open library `lib` in a new session, pick the paid CNM backend, upload TEXT and run CHOP: the error lines."""
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["lib"] = lib
    at.run()
    [llm] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
    llm.select("openai")
    at = click(at, "Save settings")
    at.session_state["specs"] = ["chop:size=24:overlap=0"]
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([("breeze.md", TEXT, "text/plain")]).run()
    at = click(at, "Add uploaded files")
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    assert not at.exception
    return [e.value.replace("\\", "") for e in at.error]  # shown as escaped Markdown


def test_two_library_ids_from_one_client_share_the_paid_request_hour(monkeypatch, tmp_path, chat):
    config = tmp_path / "server.toml"
    config.write_text(f'offer_paid_backends = true\nllm_requests_per_hour = 5\nmodel_server_url = "{chat.url}"\n')
    monkeypatch.setenv("CHUNKLENS_CONFIG", str(config))
    monkeypatch.setenv("CHUNKLENS_MODE", "shared")
    monkeypatch.setattr(budget, "LEDGER", HourlyLedger())  # this test's hour only
    monkeypatch.setattr(clients, "connection", lambda session_id: SimpleNamespace(remote_ip="203.0.113.7",
                                                                                   headers=[]))
    first = _run_chop_in(monkeypatch, tmp_path / "ws", "visitora1")
    assert any("reached the server's limit of 5 paid requests per hour" in line for line in first)
    assert len(chat.seen) == 5
    second = _run_chop_in(monkeypatch, tmp_path / "ws", "visitorb2")  # a freshly minted library id
    assert any("reached the server's limit of 5 paid requests per hour" in line for line in second)
    assert len(chat.seen) == 5  # the new library brought no new hour


def test_the_operators_paid_embedder_is_charged_to_the_visitors_hour(monkeypatch, tmp_path):
    """The operator's OpenAI-compatible embedding server on loopback counts what it is sent (one batch for a
    document's chunks): the visitor's second library, with a document of its own, is refused before anything is
    sent, in one line."""
    server = Recorder()
    try:
        config = tmp_path / "server.toml"
        config.write_text(f'embedders = ["openai:text-embedding-3-small"]\nembedder_base_url = "{server.url}"\n'
                          "llm_requests_per_hour = 1\n")
        monkeypatch.setenv("CHUNKLENS_CONFIG", str(config))
        monkeypatch.setenv("CHUNKLENS_MODE", "shared")
        monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
        monkeypatch.setattr(budget, "LEDGER", HourlyLedger())
        monkeypatch.setattr(clients, "connection", lambda session_id: SimpleNamespace(remote_ip="203.0.113.7",
                                                                                       headers=[]))
        lines: dict[str, list[str]] = {}
        for lib, text in (("visitora1", TEXT), ("visitorb2", b"Descale the Brew 5 kettle every month.")):
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
            at.query_params["lib"] = lib
            at.session_state["specs"] = ["naive-500t"]
            at.run().switch_page("pages/documents.py").run()
            at.file_uploader(key="uploader").set_value([("manual.md", text, "text/plain")]).run()
            at = click(at, "Add uploaded files")
            at.switch_page("pages/chunks.py").run()
            at = click(at, "Run chunkers")
            assert not at.exception
            lines[lib] = [e.value.replace("\\", "") for e in at.error]
        assert lines["visitora1"] == [] and len(server.seen) == 1  # one batch: the visitor's hour
        [refused] = lines["visitorb2"]
        assert refused.startswith("naive-500t: stopped before a request to embeddings at 127.0.0.1:")
        assert refused.endswith("this visitor's address reached the server's limit of 1 paid requests per hour "
                                "(LLM, embedding and rerank: llm_requests_per_hour); try again later")
    finally:
        server.httpd.shutdown()


def test_a_file_that_finds_every_reader_busy_waits_with_a_line_then_is_refused_alone(monkeypatch, tmp_path):
    """The operator's one reader is busy (another visitor's PDF): the upload says its PDF waits, refuses it in one
    line when the wait ends, and keeps the text file uploaded with it."""
    from core.ingest import reader_pool
    from tests.support.pdfs import make_pdf

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("CHUNKLENS_READER_WORKERS", "1")
    monkeypatch.setattr(reader_pool, "WAIT_SECONDS", 0.5)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    try:
        with reader_pool.POOL.slot():
            at.switch_page("pages/documents.py").run()
            at.file_uploader(key="uploader").set_value([
                ("manual.pdf", make_pdf(["Clean the filter."]), "application/pdf"),
                ("notes.md", b"Descale the kettle every month.", "text/plain")]).run()
            at = click(at, "Add uploaded files")
    finally:
        reader_pool.configure(reader_pool.DEFAULT_READERS)
    assert not at.exception
    assert [i.value.replace("\\", "") for i in at.info if "file reader" in i.value] == [
        "manual.pdf waits for a free file reader (this server runs 1 at once: reader_workers)"]
    [refused] = [e.value.replace("\\", "") for e in at.error]
    assert refused.startswith("manual.pdf: not read, every file reader it may use stayed busy for 0.5 seconds")
    assert any("Added 1 document(s): notes" in s.value for s in at.success)
