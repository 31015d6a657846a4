"""A shared server's limits on paid LLM requests (issue 39, item 8): the operator's switch that offers or hides
paid CNM backends, and the per-run and per-visitor-hour caps that stop a run with one line."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.llm.base import ChatRequest, LLMClient
from core.llm.budget import HOUR, HourlyLedger, LLMLimitReached, RequestBudget, budget_scope
from core.methods.chop.cnm import PromptedCnm
from core.schema.documents import Document
from core.server_config import ServerConfig, load_server_config
from core.settings import Settings, session_settings, visitor_choice
from tests.support.fakes import ScriptedChat


class PaidChat(ScriptedChat):
    """A scripted backend that bills like an OpenAI-compatible server, four requests at a time."""

    paid = True
    max_concurrency = 4


def _answers(prompt: str) -> str:
    return '{"same": true, "reason": ""}' if "same" in prompt.lower() else '{"model": "X1"}'


def test_a_run_stops_at_the_per_run_limit_with_one_line():
    chat = PaidChat(_answers)
    client = LLMClient(chat)
    requests = [ChatRequest(f"question {i}") for i in range(719)]
    with budget_scope(RequestBudget(5)), pytest.raises(LLMLimitReached, match="5 paid LLM requests per run"):
        client.ask_many(requests)
    assert len(chat.requests) == 5  # the pool's threads are charged too, never past the limit


def test_chop_on_4_kb_sends_no_more_requests_than_the_run_allows():
    chat = PaidChat(_answers)
    doc = Document("d", "", " ".join(f"Word{i} of the manual." for i in range(1000))[:4096])
    chop = make_chunker("chop:size=24:overlap=0", ChunkerContext(llm=PromptedCnm(LLMClient(chat))))
    with budget_scope(RequestBudget(20)), pytest.raises(LLMLimitReached, match="llm_requests_per_run"):
        chop.chunk(doc)
    assert len(chat.requests) == 20


def test_without_a_budget_or_for_a_free_backend_nothing_is_counted():
    paid = PaidChat(_answers)
    LLMClient(paid).ask_many([ChatRequest(f"q{i}") for i in range(30)])  # no scope: the command line, local
    assert len(paid.requests) == 30
    free = ScriptedChat(_answers)
    with budget_scope(RequestBudget(1)):
        LLMClient(free).ask_many([ChatRequest(f"q{i}") for i in range(30)])  # an in-process model costs no key
    assert len(free.requests) == 30


def test_cached_answers_cost_nothing(tmp_path):
    from core.llm.base import AnswerCache

    chat = PaidChat(_answers)
    client = LLMClient(chat, AnswerCache(tmp_path / "answers.sqlite"))
    requests = [ChatRequest(f"q{i}") for i in range(3)]
    with budget_scope(RequestBudget(3)):
        client.ask_many(requests)
    with budget_scope(RequestBudget(1)):
        client.ask_many(requests)  # all from the cache: a rerun after a stop continues for free
    assert len(chat.requests) == 3


def test_a_visitor_hour_is_counted_across_runs_and_frees_after_an_hour():
    now = [0.0]
    ledger = HourlyLedger(clock=lambda: now[0])
    client = LLMClient(PaidChat(_answers))
    for run in range(3):
        with budget_scope(RequestBudget(10, visitor="lib-a", per_hour=4, ledger=ledger)):
            client.ask(ChatRequest(f"a{run}"))
    with budget_scope(RequestBudget(10, visitor="lib-b", per_hour=4, ledger=ledger)):
        client.ask(ChatRequest("b"))  # another library has its own hour
    with budget_scope(RequestBudget(10, visitor="lib-a", per_hour=4, ledger=ledger)):
        client.ask(ChatRequest("a3"))
        with pytest.raises(LLMLimitReached, match="limit of 4 paid requests per hour"):
            client.ask(ChatRequest("a4"))
    now[0] = HOUR + 1
    with budget_scope(RequestBudget(10, visitor="lib-a", per_hour=4, ledger=ledger)):
        client.ask(ChatRequest("a5"))


def test_paid_backends_are_hidden_from_visitors_unless_the_operator_offers_them(tmp_path):
    kinds = ("rule", "extract", "openai")
    hidden = load_server_config(tmp_path / "none.toml", {})
    assert hidden.offered_backends("shared", kinds) == ["rule", "extract"]
    assert hidden.offered_backends("local", kinds) == list(kinds)  # a local user pays for their own requests
    offered = load_server_config(tmp_path / "none.toml", {"CHUNKLENS_OFFER_PAID_BACKENDS": "true",
                                                          "CHUNKLENS_LLM_REQUESTS_PER_RUN": "7"})
    assert offered.offered_backends("shared", kinds) == list(kinds) and offered.llm_requests_per_run == 7
    assert "not offered" in hidden.describe()["paid LLM backends"]


def test_a_saved_or_forged_paid_choice_falls_back_to_a_free_backend():
    config = ServerConfig(workspace="ws")
    current = session_settings("shared", config, None, {"cnm_backend": "openai"})
    assert current.cnm_backend == "extract"
    assert session_settings("shared", config, None, {"llm": "openai"}).cnm_backend == "extract"  # by its old name
    submitted = current.model_copy(update={"cnm_backend": "openai"})
    assert visitor_choice(config, current, submitted).cnm_backend == "extract"
    assert visitor_choice(config, current, current.model_copy(update={"cnm_backend": "rule"})).cnm_backend == "rule"
    open_config = ServerConfig(workspace="ws", offer_paid_backends=True)
    assert visitor_choice(open_config, current, submitted).cnm_backend == "openai"
    assert isinstance(current, Settings)


def test_paid_embedding_requests_count_against_the_visitors_hour(tmp_path):
    """A real OpenAI-compatible embedding server on loopback (llama.cpp's): each batch is one request, counted
    against the visitor's hour and not the run's LLM limit; the request past the hour is never sent."""
    from core.store.embeddings import OpenAIEmbedder
    from tests.support.llm_server import llama_server

    ledger = HourlyLedger()
    with llama_server(tmp_path, embedding=True) as server:
        embedder = OpenAIEmbedder("smollm2", base_url=server.base_url, batch_size=2)
        sent: list[int] = []
        hour = r"^stopped before a request to embeddings at 127\.0\.0\.1:\d+/v1:smollm2: this visitor's address " \
               r"reached the server's limit of 3 paid requests per hour \(LLM, embedding and rerank: " \
               r"llm_requests_per_hour\); try again later$"
        with budget_scope(RequestBudget(1, visitor="203.0.113.7", per_hour=3, ledger=ledger)), \
                pytest.raises(LLMLimitReached, match=hour):
            embedder.embed([f"Clean filter {i}." for i in range(10)], progress=lambda done, _n: sent.append(done))
        assert sent == [2, 4, 6]  # three batches answered (past the run's LLM limit of 1), the fourth never sent
        with budget_scope(RequestBudget(10, visitor="203.0.113.7", per_hour=3, ledger=ledger)), \
                pytest.raises(LLMLimitReached, match="limit of 3 paid requests per hour"):
            embedder.embed(["Another run of the same visitor."])
        with budget_scope(RequestBudget(10, visitor="198.51.100.4", per_hour=3, ledger=ledger)):
            assert embedder.embed(["Another visitor."]).shape[0] == 1


def test_paid_rerank_requests_count_against_the_visitors_hour():
    from core.schema.chunks import Chunk
    from core.store.rerank import EndpointReranker
    from tests.support.http_json import send_json

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            seen.append(self.path)
            send_json(self, 200, {"results": [{"index": i, "relevance_score": 1.0 / (i + 1)}
                                              for i in range(len(body["documents"]))]})

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        reranker = EndpointReranker(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        chunks = [Chunk("d", 0, 14, f"Clean filter {i}.", 3, index=i) for i in range(3)]
        with budget_scope(RequestBudget(10, visitor="203.0.113.7", per_hour=2, ledger=HourlyLedger())):
            reranker.scores("filter?", None, chunks)
            reranker.scores("filter?", None, chunks)
            with pytest.raises(LLMLimitReached, match=r"before a request to /rerank at .*limit of 2 paid requests"):
                reranker.scores("filter?", None, chunks)
        assert len(seen) == 2  # the third never reached the server
    finally:
        httpd.shutdown()
