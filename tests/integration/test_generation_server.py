"""Answers from each chunker's top-k through a real OpenAI-compatible server on loopback (llama-cpp-python's, the
bundled SmolLM2 GGUF): in the bench, cached on a rerun, and on the app's Query page (the metrics by hand:
tests/unit/test_generation.py)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_answers_through_a_real_server_and_reruns_from_the_cache(tmp_path, cached_minilm, llama):
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.infra.workspace import Workspace
    from core.ingest.datasets import first_documents, load_dataset
    from core.llm.base import AnswerCache, LLMClient
    from core.llm.openai_backend import OpenAICompatibleChat
    from core.services import Services
    from core.settings import Settings
    from core.store.index import StoreSettings, VectorStore
    from core.store.lexical import LexicalStore
    from core.store.retrieval import RetrievalSettings
    from core.workbench import sample_folder

    ds = first_documents(load_dataset(sample_folder()), 1)
    ws = Workspace.open(tmp_path / "ws")
    store = VectorStore(StoreSettings(path=ws.chroma))
    chat = LLMClient(OpenAICompatibleChat("smollm2", base_url=llama.base_url, timeout=120, max_retries=1,
                                          max_concurrency=2), AnswerCache(ws.cache / "answers.sqlite"))
    options = BenchOptions([1, 3], qualify_queries=True, retrieval=RetrievalSettings("hybrid"), answers=2,
                           answer_k=2)
    services = Services(Settings(workspace=str(ws.root)), ws, cached_minilm, store, {"chat": chat},
                        lexical=LexicalStore(ws.lexical))
    first = bench_dataset(ds, ["naive-500t", "paragraph"], options, services).to_json()
    again = bench_dataset(ds, ["naive-500t", "paragraph"], options, services).to_json()
    for spec, r in first["results"].items():
        assert r["answers_scored"] == 2 and r["answer_errors"] == 0 and r["answer_calls"] == 2, spec
        assert 0.0 <= r["answer_f1"] <= 1.0 and 0.0 <= r["answer_rouge_l"] <= 1.0 and r["answer_tokens_out"] > 0
        rerun = again["results"][spec]
        assert rerun["answer_calls"] == 0 and rerun["answer_f1"] == r["answer_f1"]  # every answer from the cache


@pytest.mark.slow
def test_the_query_page_answers_with_each_chunkers_top_3(app_workspace, llama):
    """The app's answer panel through the real llama.cpp server: one answer per chunker, scored against the sample
    set's reference answer; progress comes between batches (the Cancel button's stopping points)."""
    from streamlit.testing.v1 import AppTest

    from core.settings import Settings
    from tests.support.appflow import click, load_sample
    from tests.support.data import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["naive-500t", "recursive"]
    at.session_state["settings"] = Settings(workspace=str(app_workspace), cnm_backend="openai", model_name="smollm2",
                                            model_server_url=llama.base_url)
    at.run()
    load_sample(at)
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    at.switch_page("pages/query.py").run()
    at.selectbox[0].select_index(1).run()
    at = click(at, "Ask every chunker")
    at = click(at, "Generate the answers", timeout=600)
    assert not at.exception and not at.error
    assert any(b.label == "Cancel" for b in at.button)
    [table] = [d.value for d in at.dataframe if "answer" in d.value.columns]
    assert list(table["chunker"]) == ["naive-500t", "recursive"]
    assert table["answer"].str.len().gt(0).all() and table["token F1"].between(0, 1).all()
    assert any(m.value.startswith("Reference answer:") for m in at.markdown)
