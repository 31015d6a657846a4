"""A key typed into the app goes to the LLM server's Authorization header and nowhere else.

A distinctive fake key is typed into the real app's password field (AppTest) with the OpenAI-compatible backend
pointed at a real HTTP server on loopback. The server records what it is sent and answers 401 with the key
echoed in its error body (as careless servers do), so the key reaches code that could leak it. Then the key
must be absent from the workspace (every file, SQLite caches and their WAL files included), from the exported
zip, from everything the app rendered except the password field, from logs and stderr (at DEBUG), and from
error messages, tracebacks and reprs."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.appflow import click
from tests.support.data import ROOT
from tests.support.http_json import send_json

CANARY = f"sk-test-CANARY-{secrets.token_hex(8)}"
KEY_LABEL = "API key (this session only)"


class Recorder(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that refuses every key, echoing it back in the error body."""

    seen: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        auth = self.headers.get("Authorization", "")
        send_json(self, 401, {"error": {"message": f"Incorrect API key provided: {auth}",
                                        "type": "invalid_request_error", "code": "invalid_api_key"}})

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def llm_server() -> Iterator[str]:
    Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def rendered(node) -> Iterator[bytes]:
    """Every element the app drew, as its serialized message, except the password field (whose value is the
    key by design)."""
    children = getattr(node, "children", None)
    if children is not None:
        for child in children.values():
            yield from rendered(child)
        return
    if getattr(node, "label", None) == KEY_LABEL:
        return
    proto = getattr(node, "proto", None)
    if proto is not None:
        yield proto.SerializeToString()
    with contextlib.suppress(AttributeError, KeyError):  # no value, or a widget with no state in this run
        yield repr(node.value).encode()


def everything_under(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_typed_key_reaches_only_the_authorization_header(tmp_path, monkeypatch, capfd, caplog, llm_server):
    caplog.set_level(logging.DEBUG)
    ws = tmp_path / "ws"
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["chop"]
    at.run()
    [backend] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
    backend.select("openai")
    for label, value in (("LLM model", "canary-model"), ("LLM base URL", llm_server), (KEY_LABEL, CANARY)):
        [field] = [t for t in at.text_input if t.label == label]
        field.input(value)
    at = click(at, "Save settings")
    assert at.session_state["api_key"] == CANARY and "(key set)" in at.sidebar.caption[0].value
    seen = rendered(at._tree)

    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([("fan.md", b"# Breeze 200 fan\n\nClean the blades monthly.",
                                                 "text/markdown")]).run()
    at = click(at, "Add uploaded files")
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    errors = [e.value for e in at.error]
    assert errors and errors[0].startswith("chop: ") and "HTTP 401" in errors[0]
    seen = [*seen, *rendered(at._tree)]
    at.switch_page("pages/documents.py").run()
    at = click(at, "Prepare export")
    _, export = at.session_state["library_export"]
    seen = [*seen, *rendered(at._tree)]

    # the key did reach the server, in the Authorization header only
    assert Recorder.seen and all(h.get("authorization") == f"Bearer {CANARY}" for _, h, _ in Recorder.seen)
    assert all(CANARY.encode() not in body for _, _, body in Recorder.seen)  # never in a prompt
    assert all(CANARY not in json.dumps({k: v for k, v in h.items() if k != "authorization"})
               for _, h, _ in Recorder.seen)

    key = CANARY.encode()
    assert [name for name, data in everything_under(ws).items() if key in data] == []
    assert any(name.endswith(".sqlite") for name in everything_under(ws))  # the caches were there to check
    assert key not in export
    assert [s for s in seen if key in s] == []
    out, err = capfd.readouterr()
    assert CANARY not in out and CANARY not in err
    assert CANARY not in caplog.text and not any(CANARY in str(r.args) for r in caplog.records)


def test_errors_and_reprs_of_the_backend_hold_no_key(tmp_path, llm_server):
    from core.infra.keys import KeyRing
    from core.llm.base import ChatRequest, LLMError
    from core.services import build_services
    from core.settings import Settings

    services = build_services(Settings(workspace=str(tmp_path / "ws"), cnm_backend="openai", model_name="m",
                                       model_server_url=llm_server), KeyRing(session_key=CANARY))
    backend = services.get("llm").client.backend
    assert backend.client.api_key == CANARY  # the key is there to be used...
    shown_in = (repr(services), repr(services.get("llm")), repr(services.chat), repr(backend), str(services.settings))
    for shown in shown_in:
        assert CANARY not in shown  # ...and shown nowhere
    with pytest.raises(LLMError) as caught:
        backend.chat(ChatRequest("Which model is this?"))
    message = str(caught.value)
    assert message.startswith(f"m via {llm_server}: HTTP 401 (") and "check the model name" in message
    assert CANARY not in message and "***" in message  # the server's echo of the key is redacted
    assert CANARY not in "".join(traceback.format_exception(caught.value))  # the echoed body is not chained
    [result] = services.get("llm").extract(["Breeze 200 fan manual"])
    assert result.failed and CANARY not in f"{result.error} {result.raw} {result!r}"


URL_PASSWORD = f"pw-CANARY-{secrets.token_hex(6)}"


def test_a_password_in_a_base_url_is_kept_for_the_request_and_shown_nowhere(tmp_path, llm_server):
    """`http://user:pass@host/v1`: the client keeps the credentials for its requests; labels, cache keys, reprs,
    error lines, chunk-run identities and exported settings show the address without them."""
    import io
    import zipfile

    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.infra.workspace import Workspace
    from core.llm.base import ChatRequest, LLMError
    from core.outputs.archive import export_archive
    from core.services import build_services
    from core.settings import Settings

    url = llm_server.replace("http://", f"http://alice:{URL_PASSWORD}@")
    settings = Settings(workspace=str(tmp_path / "ws"), cnm_backend="openai", model_name="m", model_server_url=url,
                        embedder="openai:nomic-embed-text", embedder_base_url=url)
    services = build_services(settings, needs=("llm",))
    backend = services.get("llm").client.backend
    assert URL_PASSWORD in str(backend.client.base_url)  # the request's address keeps them
    bare = llm_server.removeprefix("http://")
    shown = {"chat key": backend.key, "chat label": backend.label, "chat repr": repr(backend),
             "CNM label (bench reports)": services.get("llm").label, "CNM key": services.get("llm").key,
             "embedder key": services.embedder.key,
             "chop identity (run cache key)": make_chunker("chop", ChunkerContext(llm=services.get("llm"))).identity}
    assert {k: v for k, v in shown.items() if URL_PASSWORD in v or "alice" in v} == {}
    assert bare in backend.label and bare in services.embedder.key
    with pytest.raises(LLMError) as caught:
        backend.chat(ChatRequest("Which model is this?"))
    assert URL_PASSWORD not in str(caught.value) and str(caught.value).startswith(f"m via {llm_server}: HTTP 401")

    ws = Workspace.open(tmp_path / "ws")
    with zipfile.ZipFile(io.BytesIO(export_archive(ws, settings, operator_fields=True))) as zf:
        exported = json.loads(zf.read("settings.json"))
    assert exported["model_server_url"] == exported["embedder_base_url"] == llm_server


def test_a_password_in_an_unreachable_base_url_stays_out_of_the_error_line():
    from bench.local_servers import free_port
    from core.llm.base import ChatRequest, LLMError
    from core.llm.openai_backend import OpenAICompatibleChat

    port = free_port()
    chat = OpenAICompatibleChat("m", base_url=f"http://bob:{URL_PASSWORD}@127.0.0.1:{port}/v1", max_retries=0,
                                timeout=5)
    with pytest.raises(LLMError, match=rf"check that it is running at http://127.0.0.1:{port}/v1") as caught:
        chat.chat(ChatRequest("hello"))
    assert URL_PASSWORD not in str(caught.value) and "bob" not in str(caught.value)
