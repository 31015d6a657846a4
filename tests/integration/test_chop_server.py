"""CHOP through the OpenAI code path against a real OpenAI-compatible server on loopback (llama-cpp-python's
server with the bundled SmolLM2 GGUF): JSON mode, call counts, cached reruns, and real faults (the server
dies mid-run, answers cut off into malformed JSON, a server too slow for the timeout)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError
from core.ingest.datasets import load_dataset
from core.ingest.documents import join_documents
from core.llm.base import AnswerCache, LLMClient, LLMError
from core.llm.openai_backend import OpenAICompatibleChat
from core.methods.chop.cnm import PromptedCnm
from core.schema.documents import Document
from tests.support.data import ROOT
from tests.support.llm_server import LlamaServer

pytestmark = pytest.mark.slow


def small_stream(words: int = 350) -> Document:
    """The start of two sample manuals joined: a few windows, one true join."""
    ds = load_dataset(ROOT / "sample_data" / "qa")
    docs = []
    for doc in ds.documents[:2]:
        cut = len(" ".join(doc.text.split(" ")[:words]))
        docs.append(Document(doc.doc_id, doc.title, doc.text[:cut]))
    return join_documents(docs)


def backend(server, cache_dir, **kw) -> PromptedCnm:
    chat = OpenAICompatibleChat("smollm2", base_url=server.base_url, timeout=kw.pop("timeout", 60.0),
                                max_retries=kw.pop("max_retries", 2), max_concurrency=2)
    return PromptedCnm(LLMClient(chat, AnswerCache(cache_dir / "answers.sqlite")), **kw)


def test_json_mode_call_counts_and_cached_rerun(llama, tmp_path):
    stream = small_stream()
    llm = backend(llama, tmp_path)
    chop = make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=llm))
    result = chop.chunk(stream)
    chunks, n = result.chunks, len(result.chunks)
    breaks = sum(1 for c in chunks[1:] if c.meta["continuity"] is False)
    assert n >= 4
    assert result.trace["cd_calls"] == n - 1 and result.trace["cnm_calls"] == breaks + 1
    assert llm.stats.calls == (n - 1) + (breaks + 1) and llm.stats.errors == 0
    assert llm.stats.tokens_in > 0 and llm.stats.tokens_out > 0
    for c in chunks:
        if c.meta["cnm_source"] == "extracted":
            json.loads(c.meta["cnm_raw"])  # JSON mode with the schema: the raw answer itself is JSON
        if c.meta["continuity"] is not None:
            assert c.meta["continuity_error"] is None
    again = backend(llama, tmp_path)  # a fresh client on the same answer cache: a rerun pays nothing
    rerun = make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=again)).chunk(stream)
    assert again.stats.calls == 0 and again.stats.cached == llm.stats.calls
    assert [c.meta["cnm"] for c in rerun.chunks] == [c.meta["cnm"] for c in chunks]


def test_anchor_mode_uses_at_most_n_minus_one_decisions(llama, tmp_path):
    llm = backend(llama, tmp_path)
    result = make_chunker("chop:size=200:overlap=40:mode=anchor", ChunkerContext(llm=llm)).chunk(small_stream(200))
    assert result.trace["cd_calls"] <= len(result.chunks) - 1


def test_cut_off_answers_become_null_fields_with_an_error(llama, tmp_path):
    llm = backend(llama, tmp_path, cnm_max_tokens=6, decision_max_tokens=2)  # answers end mid-JSON
    result = make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=llm)).chunk(small_stream(150))
    first = result.chunks[0].meta
    assert first["cnm"] == {"category": None, "nouns": [], "model": None, "confidence": 0.0}
    assert first["cnm_error"] and first["cnm_raw"]
    assert result.chunks[0].prefix == ""


def test_server_dying_mid_run_keeps_every_finished_answer(tmp_path):
    srv = LlamaServer(tmp_path).start()
    # the kill, not a timeout, must end the run: a dead server refuses at once, while a slow machine that shares
    # its two cores with another test's server can take well over 20 s for one answer
    llm = backend(srv, tmp_path, max_retries=1, timeout=600.0)
    stream = small_stream()
    chop = make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=llm))

    def kill_after_two_answers():
        while llm.stats.calls < 2:
            time.sleep(0.05)
        srv.stop()

    killer = threading.Thread(target=kill_after_two_answers, daemon=True)
    killer.start()
    try:
        with pytest.raises(LLMError, match="answers that arrived are saved"):
            chop.chunk(stream)
    finally:
        srv.stop()
    saved = llm.stats.calls
    assert saved >= 2 and llm.stats.errors >= 1, f"{saved} answers, {llm.stats.errors} errors"
    # same port, new server: the rerun asks only for what is missing
    srv2 = LlamaServer(tmp_path, port=srv.port).start()
    try:
        resumed = backend(srv2, tmp_path)
        result = make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=resumed)).chunk(stream)
    finally:
        srv2.stop()
    total = result.trace["cd_calls"] + result.trace["cnm_calls"]
    assert resumed.stats.cached >= saved
    assert resumed.stats.calls == total - resumed.stats.cached


def test_slow_server_times_out_with_a_clear_error(llama, tmp_path):
    # answers capped at a few tokens: the server goes on with a request the client gave up on, and the server is
    # shared, so the abandoned work must be short (50 ms is still far less than reading the prompt takes)
    llm = backend(llama, tmp_path, timeout=0.05, max_retries=0, cnm_max_tokens=6, decision_max_tokens=2)
    with pytest.raises(LLMError, match="no answer within"):
        make_chunker("chop:size=200:overlap=40", ChunkerContext(llm=llm)).chunk(small_stream(150))


def test_api_key_never_shows(tmp_path, llama, monkeypatch):
    chat = OpenAICompatibleChat("smollm2", base_url=llama.base_url, api_key="sk-test-secret-123")
    assert "sk-test-secret" not in repr(chat) and "sk-test-secret" not in chat.key
    client = LLMClient(chat, AnswerCache(tmp_path / "a.sqlite"))
    PromptedCnm(client).extract(["Nordwind 225B air conditioner"])
    assert client.stats.calls == 1
    for stored in tmp_path.glob("a.sqlite*"):  # the database and its write-ahead log
        assert b"sk-test-secret" not in stored.read_bytes()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="API key"):
        OpenAICompatibleChat("gpt-4o-mini")
