"""Faults, caused for real wherever that can be done: an LLM server that rate-limits, errs, stalls, drops the
connection, sends malformed replies or dies mid-batch (`bench/fault_server.py`, a real process on loopback);
a real `chroma run` server killed before and during an index build; the real `python -m core bench` killed
with SIGKILL mid-run. Each ends in one clear line, retries where that makes sense, and loses no finished
work: the rerun asks the LLM and the embedder only for what is missing (counted on the server and in the
caches)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.local_servers import ChromaServer, FaultServer, free_port
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import StoreError
from core.llm.base import AnswerCache, LLMClient, LLMError
from core.llm.openai_backend import OpenAICompatibleChat
from core.methods.chop.cnm import PromptedCnm
from core.pipeline import chunk_documents, index_run
from core.schema.documents import Document
from core.store.index import StoreSettings, VectorStore
from core.store.retrieval import Retriever
from tests.support.corpora import write_folder
from tests.support.data import ROOT

pytestmark = pytest.mark.slow

# five windows of 40 tokens: four continuity decisions, and one CNM call (the fault server always says "same")
SENTENCES = ["Clean the air filter of the Nordwind 225B every two weeks.",
             "Rinse it in lukewarm water and let it dry in the shade before you put it back.",
             "Error E4 means the indoor temperature sensor failed; switch the unit off and call service.",
             "The remote control uses two AAA batteries, which last about a year.",
             "In sleep mode the set temperature rises by one degree every hour, for two hours."]
DOC = Document("ac", "Nordwind 225B", " ".join(SENTENCES * 2))
SPEC = "chop:size=40:overlap=0"


@pytest.fixture(scope="module")
def faults():
    server = FaultServer().start()
    yield server
    server.kill()


def prompted(base_url: str, cache: Path, timeout: float = 5.0, max_retries: int = 2,
             concurrency: int = 1) -> PromptedCnm:
    """CHOP's real LLM path: the OpenAI client, the caching LLMClient, the prompts and the parser."""
    chat = OpenAICompatibleChat("fault", base_url=base_url, timeout=timeout, max_retries=max_retries,
                                max_concurrency=concurrency)
    return PromptedCnm(LLMClient(chat, AnswerCache(cache)))


def chop(llm: PromptedCnm):
    return make_chunker(SPEC, ChunkerContext(llm=llm)).chunk(DOC)


def cached_answers(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


def calls_for(result) -> int:
    return result.trace["cd_calls"] + result.trace["cnm_calls"]


def test_the_document_needs_five_calls(faults, tmp_path):
    faults.script()
    result = chop(prompted(faults.base_url, tmp_path / "a.sqlite"))
    assert len(result.chunks) == 5 and calls_for(result) == 5 == faults.requests()
    assert result.chunks[0].prefix == "[Category: air conditioner | Nouns: air conditioner filter | Model: 225B]"


def test_429_is_retried_after_retry_after_then_succeeds(faults, tmp_path):
    faults.script(["429", "429"], retry_after=1)
    llm = prompted(faults.base_url, tmp_path / "a.sqlite", max_retries=2)
    started = time.monotonic()
    result = chop(llm)
    assert time.monotonic() - started >= 1.9  # two waits of the server's Retry-After: 1
    assert faults.requests() == calls_for(result) + 2
    assert llm.stats.errors == 0 and llm.stats.calls == 5
    assert all(c.meta["continuity_error"] is None for c in result.chunks[1:])


def test_429_that_does_not_stop_ends_in_a_clear_error(faults, tmp_path):
    faults.script(default="429", retry_after=1)
    llm = prompted(faults.base_url, tmp_path / "a.sqlite", max_retries=1)
    with pytest.raises(LLMError, match=r"rate limited \(HTTP 429, 1 retries\); wait a minute and rerun") as err:
        make_chunker(SPEC, ChunkerContext(llm=llm)).chunk(Document("d", "", " ".join(SENTENCES[:2])))
    assert "\n" not in str(err.value)
    assert faults.requests() == 2  # one window: one CNM call, tried twice


def test_500s_keep_the_answers_that_arrived_and_a_rerun_asks_only_for_the_rest(faults, tmp_path):
    cache = tmp_path / "a.sqlite"
    faults.script(["ok", "ok"], default="500")
    llm = prompted(faults.base_url, cache, max_retries=1)
    with pytest.raises(LLMError) as err:
        chop(llm)
    message = str(err.value)
    assert "server error (HTTP 500, 1 retries); see the server's log" in message
    assert "3 LLM calls failed" in message and "the 2 answers that arrived are saved" in message
    assert faults.requests() == 2 + 3 * 2  # every failed call was retried once
    assert cached_answers(cache) == 2 and llm.stats.errors == 3
    faults.script()  # the server is fixed
    again = prompted(faults.base_url, cache)
    result = chop(again)
    assert faults.requests() == 3 and again.stats.cached == 2 and again.stats.calls == 3
    assert calls_for(result) == 5 and cached_answers(cache) == 5


def test_a_server_slower_than_the_timeout_is_a_clear_error(faults, tmp_path):
    faults.script(default="slow")
    llm = prompted(faults.base_url, tmp_path / "a.sqlite", timeout=0.5, max_retries=0)
    with pytest.raises(LLMError, match=r"no answer within 0.5 s \(0 retries\); check the server or raise the LLM"):
        make_chunker(SPEC, ChunkerContext(llm=llm)).chunk(Document("d", "", " ".join(SENTENCES[:2])))
    assert cached_answers(tmp_path / "a.sqlite") == 0


def test_a_dropped_connection_is_retried_then_a_clear_error(faults, tmp_path):
    faults.script(["close"])  # one dropped connection: the retry gets the answer
    llm = prompted(faults.base_url, tmp_path / "a.sqlite", max_retries=1)
    assert calls_for(chop(llm)) == 5 and faults.requests() == 6 and llm.stats.errors == 0
    faults.script(default="close")
    llm = prompted(faults.base_url, tmp_path / "b.sqlite", max_retries=1)
    with pytest.raises(LLMError, match="dropped the connection \\(1 retries\\); check that it is running at http"):
        chop(llm)


@pytest.mark.parametrize(("fault", "message"), [("not_json", "the reply is not JSON"),
                                                ("no_choices", "the reply has no chat completion in it")])
def test_replies_that_are_not_chat_completions_are_errors_never_cached(faults, tmp_path, fault, message):
    faults.script(default=fault)
    llm = prompted(faults.base_url, tmp_path / "a.sqlite", max_retries=2)
    with pytest.raises(LLMError, match=f"{message}; check that the base URL points at an OpenAI-compatible"):
        chop(llm)
    assert faults.requests() == 5  # not retried: the server answered, just not as a chat API
    assert cached_answers(tmp_path / "a.sqlite") == 0  # so a rerun against the right URL asks again


def test_chatty_answers_become_empty_tags_with_a_note(faults, tmp_path):
    faults.script(default="prose")
    result = chop(prompted(faults.base_url, tmp_path / "a.sqlite"))
    first, second = result.chunks[0].meta, result.chunks[1].meta
    assert first["cnm_error"] == "no JSON object in the answer" and first["cnm"]["category"] is None
    assert second["continuity"] is True and second["continuity_error"] == "no decision in the answer (kept as same)"
    assert result.chunks[0].prefix == ""
    assert cached_answers(tmp_path / "a.sqlite") == 0  # answers that do not parse are never cached: a rerun asks again


def test_server_killed_mid_batch_keeps_k_answers_and_the_rerun_asks_for_the_rest(tmp_path):
    cache = tmp_path / "a.sqlite"
    dying = FaultServer(exit_after=3).start()  # sends three answers, then SIGKILLs itself
    try:
        llm = prompted(dying.base_url, cache, max_retries=1, concurrency=2)
        with pytest.raises(LLMError, match="cannot connect, or the server dropped the connection") as err:
            chop(llm)
        dying.wait_dead()
        assert dying.proc.returncode == -signal.SIGKILL
        assert "the 3 answers that arrived are saved in the answer cache" in str(err.value)
        assert cached_answers(cache) == 3
        # still down: a rerun fails fast with the same clear line and changes nothing
        with pytest.raises(LLMError, match="cannot connect"):
            chop(prompted(dying.base_url, cache, max_retries=0))
        assert cached_answers(cache) == 3
    finally:
        dying.kill()
    revived = FaultServer(port=dying.port).start()  # same address, as after a restart
    try:
        again = prompted(revived.base_url, cache)
        result = chop(again)
        assert revived.requests() == 2 and again.stats.cached == 3
        assert calls_for(result) == 5 and cached_answers(cache) == 5
    finally:
        revived.kill()


def test_the_app_shows_a_down_llm_server_as_one_line_per_chunker(tmp_path, cached_minilm):
    from core.infra.workspace import Workspace
    from core.services import Services
    from core.settings import Settings
    from core.workbench import Corpus, run_chunkers

    ws = Workspace.open(tmp_path / "ws")
    down = f"http://127.0.0.1:{free_port()}/v1"
    services = Services(Settings(workspace=str(ws.root)), ws, cached_minilm,
                        VectorStore(StoreSettings(path=ws.chroma)),
                        {"llm": prompted(down, ws.cache / "a.sqlite", 2.0, 0)})
    results = run_chunkers(services, Corpus([DOC]), ["paragraph", SPEC])
    assert results["paragraph"].ok
    error = results[SPEC].error
    assert error is not None and "\n" not in error
    assert "cannot connect" in error and "a rerun continues from there" in error


# --- Chroma server ---------------------------------------------------------------------------------------

CHROMA_DOCS = [Document("ac", "AC", " ".join(SENTENCES * 4)),
               Document("cam", "Camera", "Charge the camera battery for three hours before first use. " * 12)]


def sentence_run():
    return chunk_documents(CHROMA_DOCS, make_chunker("sentence:max_tokens=20"))


def test_chroma_server_down_is_a_clear_error(tmp_path, cached_minilm):
    server = ChromaServer(tmp_path / "chroma").start()
    store = VectorStore(StoreSettings(host="127.0.0.1", port=server.port))
    server.kill()
    with pytest.raises(StoreError) as err:
        index_run(sentence_run(), CHROMA_DOCS, cached_minilm, store)
    message = str(err.value)
    assert message.startswith(f"chroma server 127.0.0.1:{server.port} failed while looking for an index")
    assert f"check that the server runs (chroma run --port {server.port})" in message and "\n" not in message
    with pytest.raises(StoreError, match=f"cannot open chroma server 127.0.0.1:{server.port} .*check that"):
        VectorStore(StoreSettings(host="127.0.0.1", port=server.port))


def test_chroma_killed_mid_build_then_rerun_finishes_from_cached_vectors(tmp_path, cached_minilm):
    server = ChromaServer(tmp_path / "chroma").start()
    try:
        store = VectorStore(StoreSettings(host="127.0.0.1", port=server.port), batch_size=4)
        run = sentence_run()
        n = len(run.index_units())
        assert n > 8

        def kill_after_first_batch(stage: str, done: int, total: int) -> None:
            if stage.startswith("index") and done == 4:
                server.kill()

        with pytest.raises(StoreError, match="failed while building index .*the vectors are cached, only the index"):
            index_run(run, CHROMA_DOCS, cached_minilm, store, kill_after_first_batch)
        server.start()  # same folder, same port: the half-built collection is still there
        name = next(c.name for c in store.client.list_collections())
        half = store.client.get_collection(name)
        assert half.metadata["complete"] is False and half.count() < n
        assert not store.has_complete(name, n)
        before = cached_minilm.stats.computed
        done = index_run(run, CHROMA_DOCS, cached_minilm, store)
        assert not done.reused and done.vectors_computed == 0 and cached_minilm.stats.computed == before
        assert store.has_complete(done.collection, n)
        server.kill()  # a restart between builds: the finished index is reused, and answers
        server.start()
        again = index_run(run, CHROMA_DOCS, cached_minilm, store)
        assert again.reused
        hits = Retriever(store, again.collection, run.chunks, cached_minilm).search("what does E4 mean", 1)
        assert "E4" in hits[0].chunk.text
    finally:
        server.kill()


# --- the command line, killed with SIGKILL -----------------------------------------------------------------

@pytest.fixture()
def steps(tmp_path) -> Path:
    """A qa-spans folder small enough to embed in a second or two on a busy machine, with enough sentences
    (150) that the embedder saves a batch of 128 before it is done."""
    lines = [f"Step {i}: turn dial {i} of the Nordwind {200 + i}B to position {i % 7} and wait {i % 5 + 1} "
             "minutes." for i in range(150)]
    text = " ".join(lines)
    questions = [{"qid": f"q{i}", "question": f"What do I do at step {i}?", "product": f"Nordwind {200 + i}B",
                  "references": [{"doc_id": "steps", "start": text.index(lines[i]),
                                  "end": text.index(lines[i]) + len(lines[i])}]} for i in (3, 75, 149)]
    return write_folder(tmp_path / "steps", [{"doc_id": "steps", "title": "Steps", "text": text}], questions)


def start_bench(data: Path, workspace: Path, out: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "CHUNKLENS_WORKSPACE": str(workspace), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([sys.executable, "-m", "core", "bench", "--data", str(data), "--k", "1,3",
                             "--out", str(out), "--quiet", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows(db: Path, table: str) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # the table is being created
        return 0


def kill_when(proc: subprocess.Popen, ready, timeout: float = 90.0) -> None:
    """SIGKILL `proc` as soon as `ready()` holds; fail if it ends on its own first."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.communicate()[1][-500:]}"
        assert time.monotonic() < deadline, "the run never got there"
        time.sleep(0.02)
    proc.kill()
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def finish(proc: subprocess.Popen, out: Path) -> dict:
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    return json.loads(out.read_text())


def test_bench_killed_twice_resumes_from_cached_answers_and_vectors(steps, tmp_path):
    """SIGKILL once while CHOP is asking the LLM, once while the second chunker is embedding; each rerun
    asks and embeds only what the killed run had not finished, and the third run writes the full report."""
    chop, sentence = "chop:size=150:overlap=0", "sentence:max_tokens=30"
    ws, out = tmp_path / "ws", tmp_path / "report.json"
    answers, vectors = ws / "cache" / "llm_answers.sqlite", ws / "cache" / "embeddings.sqlite"
    server = FaultServer(delay=0.2).start()
    # no reranker: its sentence vectors would join the cache while CHOP is searched, before the kill it waits for
    args = ("--chunkers", f"{chop},{sentence}", "--cnm-backend", "openai", "--model-name", "fault",
            "--model-server-url", server.base_url, "--rerank", "none")
    try:
        kill_when(start_bench(steps, ws, out, *args), lambda: rows(answers, "answers") >= 5)
        kept_answers = rows(answers, "answers")
        assert not vectors.exists() or rows(vectors, "vectors") == 0  # killed before anything was embedded
        server.script()  # count afresh
        # CHOP's 25 windows are embedded in one batch; the sentence chunker's 150 in batches of 128
        kill_when(start_bench(steps, ws, out, *args), lambda: rows(vectors, "vectors") > 128)
        asked = server.requests()
        kept_vectors = rows(vectors, "vectors")
        server.script()
        report = finish(start_bench(steps, ws, out, *args), out)
        asked_last = server.requests()
    finally:
        server.kill()
    total_answers = rows(answers, "answers")
    assert 0 < kept_answers < total_answers and asked == total_answers - kept_answers
    assert asked_last == 0 and report["results"][chop]["llm_calls"] == 0
    assert report["results"][chop]["cached"] == {"chunks": True, "collection": True, "lexical": True}
    result = report["results"][sentence]
    computed, n = result["vectors_computed"], result["n_chunks"]
    assert 0 < computed < n and result["cached"] == {"chunks": True, "collection": False, "lexical": False}
    # the cache holds what the killed runs saved, what the last run computed and the questions, nothing twice
    assert kept_vectors + computed <= rows(vectors, "vectors") <= kept_vectors + computed + report["n_questions"]


def test_openai_embeddings_from_a_server_without_them_or_down_are_clear_errors(faults, tmp_path):
    """The OpenAI embedder's failures are one line too: a chat-only server (HTTP 404 on /v1/embeddings) and a
    port nobody listens on; the vectors of earlier batches stay in the cache."""
    from core.infra.errors import EmbeddingError
    from core.store.embeddings import CachedEmbedder, EmbeddingCache, OpenAIEmbedder

    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    chat_only = CachedEmbedder(OpenAIEmbedder("e", base_url=faults.base_url, timeout=5), cache)
    with pytest.raises(EmbeddingError, match=r"embeddings from .*: HTTP 404 .*check the model name, base URL"):
        chat_only.embed(["the filter", "the remote"])
    down = OpenAIEmbedder("e", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    down.client = down.client.with_options(max_retries=0)
    with pytest.raises(EmbeddingError, match="cannot connect, or the server dropped the connection"):
        down.embed(["the filter"])
