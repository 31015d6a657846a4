"""`core.evaluation.prefetch` without Ray (its in-process executor): a killed run resumes from the groups it had
finished, and what it caches is what the single-process bench would have made and embedded itself."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.chunkers.registry import make_chunker
from core.evaluation.prefetch import SERVER_REQUESTS, InlineExecutor, groups_of, prefetch
from core.ingest.datasets import load_dataset
from core.pipeline import chunk_documents, index_run, load_chunk_run
from core.services import build_services
from core.settings import Settings
from tests.support.corpora import tiny_folder

SPEC = "naive-500t:size=20:overlap=5"


class Killed(InlineExecutor):
    """Killed once its first group of documents is chunked."""

    def chunk(self, settings, library, jobs):
        for j, result in super().chunk(settings, library, jobs):
            yield j, result
            raise KeyboardInterrupt


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")
    dataset = load_dataset(tiny_folder(tmp_path / "tiny"))
    return dataset.documents, build_services(Settings(workspace=str(tmp_path / "ws")), needs=set())


def test_groups_cover_every_document_once_in_order():
    for n, workers in ((0, 2), (1, 2), (2, 1), (7, 2), (1000, 2), (5, 64)):
        groups = groups_of(n, workers)
        assert [i for g in groups for i in g] == list(range(n))
        assert all(0 < len(g) <= 32 for g in groups)


def test_a_killed_prefetch_resumes_from_its_finished_groups(tiny):
    documents, services = tiny
    chunk_runs = services.workspace.chunk_runs
    with pytest.raises(KeyboardInterrupt):
        prefetch(documents, [SPEC], services, Killed())
    chunker = make_chunker(SPEC, services.context())
    assert load_chunk_run(documents, chunker, chunk_runs) is None  # no half run is ever taken for a whole one
    assert len(list((chunk_runs / "parts").glob("*.json"))) == 1
    done = prefetch(documents, [SPEC], services, InlineExecutor())
    assert (done.chunk_tasks_kept, done.chunk_tasks) == (1, len(documents) - 1)
    assert not list((chunk_runs / "parts").glob("*.json"))  # the parts go once their run is whole
    cached = load_chunk_run(documents, chunker, chunk_runs)
    fresh = chunk_documents(documents, make_chunker(SPEC, services.context()))
    assert cached is not None and [c.to_dict() for c in cached.chunks] == [c.to_dict() for c in fresh.chunks]
    assert cached.traces == fresh.traces
    assert done.vectors_computed == len({c.embed_text for c in fresh.chunks}) > 0
    again = prefetch(documents, [SPEC], services, InlineExecutor())
    assert (again.runs_cached, again.chunk_tasks, again.vectors_computed) == (1, 0, 0)
    indexed = index_run(cached, documents, services.embedder, services.store)
    assert indexed.vectors_computed == 0  # the bench embeds nothing the prefetch left


class _FakeEmbeddings(BaseHTTPRequestHandler):
    """/v1/embeddings of an OpenAI-compatible server: a vector from each text's digest, after a pause, counting
    how many requests are in flight at once."""

    lock = threading.Lock()
    in_flight = 0
    most = 0
    requests = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.requests += 1
            cls.most = max(cls.most, cls.in_flight)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(0.2)
        data = [{"object": "embedding", "index": i, "embedding": _vector(text)} for i, text in enumerate(body["input"])]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
        with cls.lock:
            cls.in_flight -= 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        return None


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 + 0.01 for b in digest[:8]]


def test_an_embedding_servers_batches_are_sent_concurrently(tmp_path, monkeypatch):
    """With an `openai:` embedder the batches go to its server SERVER_REQUESTS at a time, and the cache then holds
    the server's vectors for every text the bench will embed."""
    monkeypatch.setenv("CHUNKLENS_MACHINE_VECTORS", "off")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        documents = load_dataset(tiny_folder(tmp_path / "tiny")).documents
        settings = Settings(workspace=str(tmp_path / "ws"), embedder="openai:fake",
                            embedder_base_url=f"http://127.0.0.1:{server.server_port}/v1")
        services = build_services(settings, needs=set())
        services.embedder.save_every = 1  # a batch per text
        done = prefetch(documents, [SPEC], services, InlineExecutor())
    finally:
        server.shutdown()
    assert done.embed_batches > SERVER_REQUESTS and _FakeEmbeddings.requests == done.embed_batches
    assert 1 < _FakeEmbeddings.most <= SERVER_REQUESTS
    run = load_chunk_run(documents, make_chunker(SPEC, services.context()), services.workspace.chunk_runs)
    indexed = index_run(run, documents, services.embedder, services.store)
    assert indexed.vectors_computed == 0 and _FakeEmbeddings.requests == done.embed_batches


def test_a_task_is_sent_its_own_documents_unless_its_chunker_learns_the_library(tmp_path):
    """At 100,000 manuals the library is gigabytes: only a chunker that reads all of it before chunking (CHOP,
    whose extract backend learns it) is sent it; any other task gets its group's documents alone."""
    import core.catalog  # noqa: F401 - every chunker registered
    from core.chunkers.registry import REGISTRY
    from core.evaluation.prefetch import GroupJob, learns_from_library, task_documents

    documents = load_dataset(tiny_folder(tmp_path / "tiny")).documents
    own = task_documents(GroupJob(make_chunker(SPEC), (1,)), documents)
    assert own is not None and own[0] == [documents[1]] and own[1] == (0,)
    assert task_documents(GroupJob(make_chunker("chop"), (1,)), documents) is None
    assert {name for name, kind in REGISTRY.items() if learns_from_library(kind())} == {"chop"}


@pytest.mark.parametrize("spec", [SPEC, "page"])  # `page` leaves a note in the trace of a document without pages
def test_a_prefetched_run_is_cached_byte_for_byte_as_the_bench_caches_it(tiny, tmp_path, spec):
    """The whole run a resumed prefetch writes from its parts (one kept on disk, the others from the tasks) is the
    file `chunk_documents` writes for the same chunker, to the byte: chunks, their key order and the traces."""
    from core.pipeline import run_key

    documents, services = tiny
    with pytest.raises(KeyboardInterrupt):
        prefetch(documents, [spec], services, Killed())
    prefetch(documents, [spec], services, InlineExecutor())
    chunker = make_chunker(spec, services.context())
    name = f"{run_key(documents, chunker.identity)}.json"
    own = tmp_path / "own"
    own.mkdir()
    run = chunk_documents(documents, make_chunker(spec, services.context()), own)
    assert (own / name).read_bytes() == (services.workspace.chunk_runs / name).read_bytes()
    assert spec == SPEC or run.traces  # the trace really is written


def test_the_executor_key_keeps_its_fields_in_order():
    """A bench report's `executor` key is `PrefetchReport.to_json` (and the address): its keys never move."""
    from core.evaluation.prefetch import PrefetchReport

    done = PrefetchReport("ray", 2, llm_use={"lumber": {"calls": 3, "tokens_in": 40, "tokens_out": 5}})
    assert done.to_json()["llm_use"] == {"lumber": {"calls": 3, "tokens_in": 40, "tokens_out": 5}}
    assert list(done.to_json()) == ["executor", "workers", "chunk_tasks", "chunk_tasks_kept", "runs_cached",
                                    "chunk_seconds", "vectors_computed", "embed_batches", "embed_seconds", "llm_use"]
