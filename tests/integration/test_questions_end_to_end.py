"""Generated questions end to end: the whole run through a real llama.cpp server on loopback, and
`python -m core questions` as a child process, with its default backend, against a server that answers only chatter,
and with bad input (the rules with a scripted model: tests/unit/test_questions.py)."""

from __future__ import annotations

import re
import time

import pytest

from core.evaluation.questions import generate_questions, looks_like_question, write_set
from core.ingest.datasets import load_dataset
from core.llm.base import AnswerCache, LLMClient
from tests.support.cli import run_cli

# --- through a real llama.cpp server -----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("design", "n"), [("pick", 4), ("quote", 2)])
def test_questions_through_a_real_llama_server(tmp_path, design, n, llama):
    """The bundled SmolLM2 behind llama-cpp-python's OpenAI-compatible server: every kept question's reference is
    exactly its evidence, every answer is kept or counted under a reason, and a rerun is answered from the cache.
    The quote design asks for fewer: its answers are longer (about 15 s each on two cores, against 7)."""
    from core.ingest.datasets import first_documents
    from core.llm.openai_backend import OpenAICompatibleChat
    from core.workbench import sample_folder

    docs = first_documents(load_dataset(sample_folder()), 2).documents
    cache = AnswerCache(tmp_path / "answers.sqlite")

    def client() -> LLMClient:
        return LLMClient(OpenAICompatibleChat("smollm2", base_url=llama.base_url, timeout=120, max_retries=1,
                                              max_concurrency=1), cache)

    started = time.perf_counter()
    first = generate_questions(docs, client(), n, design=design, seed=0)
    took = time.perf_counter() - started
    again = generate_questions(docs, client(), n, design=design, seed=0)
    print(f"{design}: {first.attempts} answers in {took:.1f} s, kept {len(first.questions)}, "
          f"rejected {dict(first.rejected)}")
    assert first.calls == first.attempts > 0 and first.errors == 0
    assert sum(first.rejected.values()) + len(first.questions) == first.attempts
    assert first.attempts <= 3 * n
    texts = {d.doc_id: d.text for d in docs}
    for q in first.questions:
        (ref,) = q.references
        assert texts[ref.doc_id][ref.start:ref.end] == q.answer
        assert texts[ref.doc_id].count(q.answer) == 1
        assert looks_like_question(q.question) and q.product
    assert again.calls == 0 and again.cached == first.attempts
    assert again.questions == first.questions and again.rejected == first.rejected
    if first.questions:
        assert load_dataset(write_set(tmp_path / "set", docs, first)).questions == first.questions


# --- the command line --------------------------------------------------------------------------------------------

def test_cli_empty_input_and_a_used_out_folder_are_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("questions", "--data", str(empty), "--n", "2", "--out", str(tmp_path / "out"),
                   workspace=tmp_path / "ws")
    assert proc.returncode == 2 and "no corpus.jsonl" in proc.stderr
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n")
    proc2 = run_cli("questions", "--data", str(blank), "--n", "2", "--out", str(tmp_path / "out"),
                    workspace=tmp_path / "ws")
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("x")
    proc3 = run_cli("questions", "--data", str(blank), "--n", "2", "--out", str(used), workspace=tmp_path / "ws")
    assert proc3.returncode == 2 and "not an empty folder" in proc3.stderr
    proc4 = run_cli("questions", "--data", str(tmp_path / "nowhere.pdf"), "--n", "2", "--out", str(tmp_path / "out"),
                    workspace=tmp_path / "ws")
    assert "no such file or folder" in proc4.stderr
    proc5 = run_cli("questions", "--data", str(blank), "--n", "0", "--out", str(tmp_path / "out"),
                    workspace=tmp_path / "ws")
    assert "--n must be at least 1" in proc5.stderr
    for p in (proc, proc2, proc3, proc4, proc5):
        assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.strip().count("\n") == 0, p.stderr
    assert not (tmp_path / "out").exists()



@pytest.mark.slow
def test_cli_answers_without_a_findable_quote_are_one_line_with_the_counts(tmp_path):
    """A real OpenAI-compatible server process whose every answer is chatter, not the JSON asked for: nothing is
    kept, and the one error line says why, with the rejection counts; no folder is written."""
    from bench.local_servers import FaultServer
    from core.workbench import sample_folder

    server = FaultServer().start()
    try:
        server.script(default="prose")
        proc = run_cli("questions", "--data", str(sample_folder()), "--n", "2", "--out", str(tmp_path / "out"),
                       "--design", "quote", "--cnm-backend", "openai", "--model-name", "fault", "--model-server-url",
                       server.base_url, workspace=tmp_path / "ws")
        assert server.requests() == 6  # 3 passages per question wanted, each asked once
    finally:
        server.stop()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "error: no question kept of 6 answers (malformed answer 6)"
    assert "Traceback" not in proc.stderr and len(lines) == 2  # the start line, then the error
    assert not (tmp_path / "out").exists()



@pytest.mark.slow
def test_cli_writes_a_set_with_the_default_backend_and_a_rerun_asks_nothing(tmp_path):
    """`python -m core questions` with its default backend (the bundled GGUF through llama.cpp, in-process) writes a
    set that loads, with the run's account in its README; the same run into a new folder answers from the
    workspace's cache."""
    from core.workbench import sample_folder

    args = ["questions", "--data", str(sample_folder()), "--n", "2", "--seed", "4"]
    started = time.perf_counter()
    first = run_cli(*args, "--out", str(tmp_path / "one"), workspace=tmp_path / "ws")
    took = time.perf_counter() - started
    assert first.returncode == 0, first.stderr
    again = run_cli(*args, "--out", str(tmp_path / "two"), workspace=tmp_path / "ws")
    assert again.returncode == 0, again.stderr
    print(f"cli: {took:.1f} s; {first.stderr.strip().splitlines()[-1]}")
    ds = load_dataset(tmp_path / "one")
    texts = {d.doc_id: d.text for d in ds.documents}
    assert 1 <= len(ds.questions) <= 2 and len(ds.documents) == 7
    for q in ds.questions:
        (ref,) = q.references
        assert texts[ref.doc_id][ref.start:ref.end] == q.answer and q.product
    assert "SmolLM2-135M-Instruct" in (tmp_path / "one" / "README.md").read_text()
    assert re.search(r"model calls [1-9]\d*, from the cache 0\)", first.stderr)
    assert re.search(r"model calls 0, from the cache [1-9]", again.stderr)
    assert (tmp_path / "one" / "questions.jsonl").read_bytes() == (tmp_path / "two" / "questions.jsonl").read_bytes()
