"""Who may send which key where, and what one browser session can change for another (docs/SECURITY.md).

Real app sessions through AppTest, and a real HTTP server on loopback (on a thread of the test) that records every
request it gets and answers as an OpenAI-compatible embedding server would. The server's key is a canary in
OPENAI_API_KEY. Which address scripts/run-app.sh listens on: tests/integration/test_run_app_listening.py."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from streamlit.testing.v1 import AppTest

from core.infra.keys import KeyRing
from core.server_config import load_server_config, resolve_mode
from core.settings import load_settings
from tests.support.appflow import click
from tests.support.corpora import MANUAL
from tests.support.data import ROOT
from tests.support.http_json import send_json

SERVER_KEY = "sk-server-CANARY-0b7c51e2"
VISITOR_KEY = "sk-visitor-CANARY-93d1aa04"


class Recorder:
    """An OpenAI-compatible embedding server on loopback that keeps the Authorization header of every request."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                seen.append({"path": self.path, "authorization": self.headers.get("Authorization", "")})
                texts = body.get("input") or []
                data = [{"object": "embedding", "index": i, "embedding": [1.0, float(len(t) % 7), 0.5, 0.25]}
                        for i, t in enumerate(texts)]
                send_json(self, 200, {"object": "list", "data": data, "model": body.get("model", "x"),
                                      "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def keys_seen(self) -> set[str]:
        return {r["authorization"].removeprefix("Bearer ") for r in self.seen}


@pytest.fixture()
def recorder():
    server = Recorder()
    yield server
    server.httpd.shutdown()


def session(monkeypatch, ws, mode: str = "local") -> AppTest:
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    monkeypatch.setenv("CHUNKLENS_MODE", mode)
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["naive-500t"]
    return at.run()


def type_into(at: AppTest, fields: dict[str, str]) -> AppTest:
    if not any(t.label == "API key (this session only)" for t in at.text_input):  # the sidebar shows on Home
        at.switch_page("app.py").run()
    for label, value in fields.items():
        [field] = [t for t in at.text_input if t.label == label]
        field.input(value)
    return click(at, "Save settings")


def upload_and_run(at: AppTest) -> AppTest:
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([("breeze.md", MANUAL, "text/plain")]).run()
    at = click(at, "Add uploaded files")
    at.switch_page("pages/chunks.py").run()
    return click(at, "Run chunkers")


def test_an_address_typed_by_visitor_a_gets_nothing_from_visitor_b(monkeypatch, tmp_path, recorder):
    ws = tmp_path / "ws"
    a = type_into(session(monkeypatch, ws), {"Embedder": "openai:text-embedding-3-small",
                                             "Embedding server base URL": recorder.url})
    assert a.session_state["settings"].embedder_base_url == recorder.url
    b = upload_and_run(session(monkeypatch, ws))
    assert not b.exception
    assert b.session_state["settings"].embedder_base_url == ""
    assert recorder.seen == []  # B's documents and the server's key went nowhere near A's address


def test_an_address_a_visitor_types_never_gets_the_server_key_in_their_own_session(monkeypatch, tmp_path,
                                                                                    recorder):
    at = type_into(session(monkeypatch, tmp_path / "ws"), {"Embedder": "openai:text-embedding-3-small",
                                                           "Embedding server base URL": recorder.url})
    at = upload_and_run(at)
    assert not at.exception and recorder.seen  # the visitor's own run went to the visitor's own server...
    assert SERVER_KEY not in recorder.keys_seen()  # ...without the server's key
    recorder.seen.clear()
    at = type_into(at, {"API key (this session only)": VISITOR_KEY})
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([("kettle.txt", b"Descale the kettle every month.", "text/plain")]).run()
    at = click(at, "Add uploaded files")
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")  # the new document's texts are embedded now, with the key this visitor typed
    assert not at.exception and recorder.keys_seen() == {VISITOR_KEY}


def test_the_operator_address_gets_the_server_key(monkeypatch, tmp_path, recorder):
    """The control: the key does go where the operator said, so the tests above can fail."""
    config = tmp_path / "server.toml"
    config.write_text(f'embedders = ["openai:text-embedding-3-small", "bundled:minilm-fp32"]\n'
                      f'embedder_base_url = "{recorder.url}"\n')
    monkeypatch.setenv("CHUNKLENS_CONFIG", str(config))
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    assert at.session_state["settings"].embedder == "openai:text-embedding-3-small"  # the operator's first offer
    [embedder] = [s for s in at.selectbox if s.label == "Embedder"]
    embedder.select("bundled:minilm-fp32")
    at = click(at, "Save settings")
    assert at.session_state["settings"].embedder == "bundled:minilm-fp32"
    [embedder] = [s for s in at.selectbox if s.label == "Embedder"]
    embedder.select("openai:text-embedding-3-small")
    at = upload_and_run(click(at, "Save settings"))
    assert not at.exception
    assert recorder.keys_seen() == {SERVER_KEY}


def test_a_shared_server_offers_no_address_workspace_or_limit_to_visitors(monkeypatch, tmp_path):
    ws = tmp_path / "ws"
    at = session(monkeypatch, ws, mode="shared")
    labels = {w.label for w in [*at.text_input, *at.number_input, *at.selectbox]}
    for operator_only in ("Embedding server base URL", "LLM base URL", "Chroma server (host:port)",
                          "Workspace folder", "Upload limit per file (MB)", "LGMGC scorer model", "LLM model"):
        assert operator_only not in labels
    assert {"Top k", "Retrieval (every chunker alike)", "Embedder", "API key (this session only)"} <= labels
    [embedder] = [s for s in at.selectbox if s.label == "Embedder"]
    assert "openai:text-embedding-3-small" not in embedder.options  # only what the operator offers
    [top_k] = [n for n in at.number_input if n.label == "Top k"]
    top_k.set_value(11)
    at = click(at, "Save settings")
    assert at.session_state["settings"].top_k == 11
    assert not (ws / "settings.json").exists()  # a visitor never writes the server's settings
    other = session(monkeypatch, ws, mode="shared")
    assert other.session_state["settings"].top_k == 5  # nor changes another visitor's
    lib = at.query_params["lib"]
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    again.query_params["lib"] = lib
    assert again.run().session_state["settings"].top_k == 11  # the visitor's choices stay with their library


def test_a_visitors_library_export_holds_none_of_the_operators_addresses_or_model_paths(monkeypatch, tmp_path):
    """Issue 39, item 5: the password in the operator's reranker address, and the operator's model paths, never
    reach the zip a visitor downloads."""
    password = "pw-CANARY-operator-5e0f"
    monkeypatch.setenv("CHUNKLENS_RERANK_MODEL", f"https://op:{password}@rerank.internal/v1")
    monkeypatch.setenv("CHUNKLENS_SCORER_MODEL", "/srv/operator-models/scorer")
    monkeypatch.setenv("CHUNKLENS_MODEL_SERVER_URL", f"http://op:{password}@llm.internal/v1")
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    at.switch_page("pages/documents.py").run()
    at = click(at, "Prepare export")
    _, export = at.session_state["library_export"]
    with zipfile.ZipFile(io.BytesIO(export)) as zf:
        bodies = {name: zf.read(name) for name in zf.namelist()}
    assert "settings.json" in bodies
    assert [n for n, b in bodies.items() if password.encode() in b or b".internal" in b or b"/srv/" in b] == []


def test_a_visitor_runs_at_most_the_shared_limit_of_chunkers(monkeypatch, tmp_path):
    """Issue 39, item 7: 40 specs made 40 collections. On a shared server one run holds at most 12; more is one
    line, and nothing is chunked."""
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([("breeze.md", MANUAL, "text/plain")]).run()
    at = click(at, "Add uploaded files")
    at.switch_page("pages/chunks.py").run()
    [extra] = [t for t in at.text_input if t.label.startswith("More chunkers")]
    extra.input(", ".join(f"recursive:theta={100 + i}" for i in range(13))).run()
    at = click(at, "Run chunkers")
    labels = [n.label for n in at.main.children.values() if type(n).__name__ == "Status"]
    assert not at.exception and any("14 chunkers in one run, over the limit of 12" in label for label in labels)
    assert not list((tmp_path / "ws" / "chunk_runs").glob("*.json"))


def test_the_key_rule():
    ring = KeyRing(SERVER_KEY, frozenset({"", "http://10.0.0.5:8000/v1"}))
    assert ring.key_for(None) == ring.key_for("") == SERVER_KEY
    assert ring.key_for("HTTP://10.0.0.5:8000/v1/") == SERVER_KEY
    assert ring.key_for("http://attacker.example/v1") is None
    visitor = KeyRing(SERVER_KEY, frozenset({""}), VISITOR_KEY)
    assert visitor.key_for("http://attacker.example/v1") == VISITOR_KEY  # the visitor's own key, to their address
    assert SERVER_KEY not in repr(visitor) and VISITOR_KEY not in repr(visitor)


def test_modes_and_the_operator_file(tmp_path):
    assert resolve_mode(load_server_config(tmp_path / "none.toml", {}), "127.0.0.1") == "local"
    assert resolve_mode(load_server_config(tmp_path / "none.toml", {}), None) == "shared"  # Streamlit: every interface
    assert resolve_mode(load_server_config(tmp_path / "none.toml", {}), "0.0.0.0") == "shared"
    assert resolve_mode(load_server_config(tmp_path / "none.toml", {"CHUNKLENS_MODE": "shared"}), "::1") == "shared"
    path = tmp_path / "server.toml"
    path.write_text('chroma_server = "10.0.0.9:8000"\nmax_upload_mb = 20\n')
    config = load_server_config(path, {"CHUNKLENS_MAX_UPLOAD_MB": "10"})
    assert (config.chroma_server, config.max_upload_mb) == ("10.0.0.9:8000", 10)  # the environment wins
    path.write_text("chroma_server = [\n")
    from core.infra.errors import ConfigError
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_server_config(path, {})
    path.write_text('api_key = "sk-in-a-file"\n')
    with pytest.raises(ConfigError, match="api_key"):
        load_server_config(path, {})


def test_a_local_save_keeps_addresses_out_of_the_settings_file(monkeypatch, tmp_path):
    ws = tmp_path / "ws"
    at = type_into(session(monkeypatch, ws), {"LLM base URL": "http://user:secret@10.1.2.3:9/v1",
                                              "Chroma server (host:port)": "10.1.2.3:8000"})
    saved = load_settings(ws)
    assert (saved.model_server_url, saved.chroma_server) == ("", "")
    assert "secret" not in (ws / "settings.json").read_text()
    assert "secret" not in " ".join(c.value for c in at.sidebar.caption)


def test_a_shared_server_hides_paid_cnm_backends_unless_the_operator_offers_them(monkeypatch, tmp_path):
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    [llm] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
    assert "OpenAI-compatible" not in llm.options and "rule-based lexicon (no model)" in llm.options
    monkeypatch.setenv("CHUNKLENS_OFFER_PAID_BACKENDS", "1")
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    [llm] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
    assert "OpenAI-compatible" in llm.options
    [chat] = [s for s in at.selectbox if s.label.startswith("Chat model")]
    assert "OpenAI-compatible" in chat.options


def test_a_shared_server_hides_the_paid_chat_model_and_refuses_a_forged_choice(monkeypatch, tmp_path):
    from core.server_config import ServerConfig
    from core.settings import Settings, visitor_choice

    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    [chat] = [s for s in at.selectbox if s.label.startswith("Chat model")]
    assert "OpenAI-compatible" not in chat.options and "local SmolLM2 (llama.cpp, JSON)" in chat.options
    forged = visitor_choice(ServerConfig(), Settings(), Settings(chat_backend="openai"))
    assert forged.chat_backend == "local"


def test_a_visit_without_a_library_address_makes_no_folder(monkeypatch, tmp_path):
    ws = tmp_path / "ws"
    at = session(monkeypatch, ws, mode="shared")
    assert not at.exception and at.query_params["lib"]
    uploads = ws / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())


def test_a_shared_server_shows_visitors_no_traceback_or_server_path(monkeypatch, tmp_path):
    from core.ingest.library import Library

    def broken(self):
        raise OSError(f"cannot read {tmp_path}/srv/chunklens/uploads/secret.json")

    monkeypatch.setattr(Library, "documents", broken)
    at = session(monkeypatch, tmp_path / "ws", mode="shared")
    [error] = at.exception
    assert not error.stack_trace and "srv/chunklens" not in error.message and str(tmp_path) not in error.message


class ChatRecorder:
    """An OpenAI-compatible chat server on loopback that counts the completions it is asked for."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append(self.path)
                send_json(self, 200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                          "role": "assistant", "content": '{"model": "B200", "same": true}'}}],
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_a_visitors_run_stops_at_the_operators_limit_on_paid_requests(monkeypatch, tmp_path):
    chat = ChatRecorder()
    try:
        config = tmp_path / "server.toml"
        config.write_text(f'offer_paid_backends = true\nllm_requests_per_run = 5\nmodel_server_url = "{chat.url}"\n')
        monkeypatch.setenv("CHUNKLENS_CONFIG", str(config))
        at = session(monkeypatch, tmp_path / "ws", mode="shared")
        [llm] = [s for s in at.selectbox if s.label == "CNM backend (CHOP)"]
        llm.select("openai")
        at = click(at, "Save settings")
        assert at.session_state["settings"].cnm_backend == "openai"
        at.session_state["specs"] = ["chop:size=24:overlap=0"]
        at.switch_page("pages/documents.py").run()
        text = b"\n\n".join(b"Clean the fan blades of the Breeze 200 every month with a dry cloth, section %d." % i
                            for i in range(60))
        at.file_uploader(key="uploader").set_value([("breeze.md", text, "text/plain")]).run()
        at = click(at, "Add uploaded files")
        at.switch_page("pages/chunks.py").run()
        at = click(at, "Run chunkers")
        assert not at.exception
        lines = [e.value.replace("\\", "") for e in at.error]  # shown as escaped Markdown
        assert any("stopped after 5 requests" in line and "(llm_requests_per_run)" in line for line in lines)
        assert len(chat.seen) == 5
    finally:
        chat.httpd.shutdown()
