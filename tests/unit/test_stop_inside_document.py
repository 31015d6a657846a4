"""Stop reaches a chunk run inside one document, not only between documents.

A run stopped on the page (Stop, a rerun) sets its flag (`ChunkerContext.should_stop`); the pipeline read it only
between documents, and the page's thread sat in the worker's `result()` meanwhile. So CHOP learning a library
before its first document, its decisions window after window, LGMGC's forward passes and pysbd's sentences of
one long manual went on to the document's end for no one. Now the chunkers' long loops read the flag at every
step (`core.infra.stopping`), the LLM client sends no request once it is set, and the page's thread calls
`progress` while it waits, where Stop reaches it.
"""

from __future__ import annotations

import threading
import time
import traceback

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.chunkers.splitting import document_token_windows
from core.infra.errors import Stopped
from core.infra.workspace import Workspace
from core.llm.base import AnswerCache, LLMClient
from core.methods.chop.cnm import PromptedCnm
from core.methods.chop.extract import ExtractCnm
from core.pipeline import chunk_documents
from core.schema.documents import Document
from core.services import Services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.text import clear_caches
from core.workbench import Corpus, run_chunkers
from tests.support.fakes import FakeEosScorer, ScriptedChat

VERBS = ("keeps", "stores", "updates", "shows", "reads", "sends", "holds", "starts", "blinks", "logs", "resets")
NOUNS = ("gyro", "motor", "battery", "receiver", "mixer", "filter", "sensor", "frame", "antenna", "buzzer")


def manual(size: int) -> Document:
    """One long manual that names its model in most sentences, with a heading every forty of them."""
    parts = ["# Orbit K5 Flight Controller User Manual\n\nThe Orbit K5 flight controller is small. "]
    n = 0
    while sum(map(len, parts)) < size:
        n += 1
        parts.append(f"The Orbit K5 {VERBS[n % len(VERBS)]} the {NOUNS[n % len(NOUNS)]} {n} when the "
                     f"{NOUNS[(n * 7) % len(NOUNS)]} is set. ")
        if n % 40 == 0:
            parts.append(f"\n\n## Section {n // 40}\n\n")
    return Document("orbit", "Orbit K5 Flight Controller User Manual", "".join(parts)[:size])


class ReadFlag:
    """A run's stop flag that turns True at its `stop_at`-th reading (never, by default); every reading's time
    is kept."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.stop_at = stop_at
        self.times: list[float] = []

    def __call__(self) -> bool:
        self.times.append(time.perf_counter())
        return self.stop_at is not None and len(self.times) >= self.stop_at

    def longest_gap(self, started: float, ended: float) -> float:
        points = [started, *self.times, ended]
        return max(b - a for a, b in zip(points, points[1:]))


@pytest.mark.parametrize("spec, needs", [("chop", {"llm": ExtractCnm}), ("lgmgc", {"scorer": FakeEosScorer}),
                                         ("sentence", {})])
def test_a_long_manual_is_chunked_with_the_stop_flag_read_all_through_it(spec, needs):
    """Between two readings of the flag lies at most half a second of one manual's chunking, and the flag is read
    all through it (the pipeline read it once per document: once here). The chunker is warmed on a short manual
    first (the tagger's lexicon, the tokenizer: loaded once per process), and the sentence memo emptied."""
    chunker = make_chunker(spec, ChunkerContext(**{need: make() for need, make in needs.items()}))
    chunk_documents([manual(5_000)], chunker)
    clear_caches()
    flag = ReadFlag()
    chunker.context.should_stop = flag
    started = time.perf_counter()
    chunk_documents([manual(150_000)], chunker)
    ended = time.perf_counter()
    assert len(flag.times) > 20
    assert flag.longest_gap(started, ended) < 0.5


def test_chop_stopped_while_it_learns_the_library_ends_there_and_caches_nothing(tmp_path):
    """CHOP's `extract` backend learns the whole library before its first document: Stop pressed then ends the
    run inside the learning, and no chunk run is cached."""
    doc = manual(150_000)
    chunker = make_chunker("chop", ChunkerContext(llm=ExtractCnm()))
    chunker.context.should_stop = ReadFlag(stop_at=4)  # the pipeline's, the chunker's, then the learning's
    with pytest.raises(Stopped) as stopped:
        chunk_documents([doc], chunker, tmp_path)
    assert "learn" in {frame.name for frame in traceback.extract_tb(stopped.value.__traceback__)}
    assert list(tmp_path.iterdir()) == []


class StopPressed(Exception):
    """What Streamlit raises in the page's thread on Stop or a rerun."""


def slow_answers(prompt: str) -> str:
    """A chat model that takes 50 ms an answer: every window the same manual, one tag for it."""
    time.sleep(0.05)
    if prompt.startswith("Decide whether"):
        return '{"same": true, "reason": "the same manual"}'
    return '{"category": "flight controller", "nouns": ["gyro"], "model": "Orbit K5", "confidence": 0.8}'


def test_stop_on_the_page_ends_a_chop_run_inside_its_document_and_keeps_what_was_done(tmp_path, minilm):
    """Stop pressed while CHOP asks a chat model about one manual's windows: the page's thread gets it within a
    heartbeat (it waited in `result()` for the whole spec before), the worker sends no further request and caches
    no chunk run, and the answers received are kept, so a rerun asks only for the rest."""
    doc = manual(60_000)
    windows = len(document_token_windows(doc.text, 0, len(doc.text), 500, 100))
    ws = Workspace.open(tmp_path / "ws")
    chat = ScriptedChat(slow_answers)
    llm = PromptedCnm(LLMClient(chat, AnswerCache(tmp_path / "answers.sqlite")))
    services = Services(Settings(workspace=str(ws.root)), ws, minilm, VectorStore(StoreSettings(path=ws.chroma)),
                        provided={"llm": llm})
    corpus = Corpus([doc])
    pressed: list[float] = []

    def progress(spec: str, done: int, total: int) -> None:
        if spec == "chop" and not pressed and len(chat.requests) >= 10:
            pressed.append(time.perf_counter())
        if pressed:
            raise StopPressed

    with pytest.raises(StopPressed):
        run_chunkers(services, corpus, ["chop"], progress)
    returned = time.perf_counter()
    for worker in [t for t in threading.enumerate() if t.name.startswith("chunk-ahead")]:
        worker.join(timeout=30)
    ended = time.perf_counter()
    asked = len(chat.requests)

    assert returned - pressed[0] < 0.5  # the page's thread is free at once
    assert ended - pressed[0] < 0.5  # and the chunking ends with at most the request under way
    assert 10 <= asked < windows  # inside the document: one request a window (decisions, then the one tag)
    assert list(ws.chunk_runs.glob("*.json")) == []

    results = run_chunkers(services, corpus, ["chop"])
    assert results["chop"].ok
    assert len(chat.requests) == windows  # the rerun asked only what the stopped run had not: its answers were kept
