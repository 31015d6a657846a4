"""`run_chunkers`' `on_result`: each spec's result, a failed one included, reaches the caller as soon as that spec
is done and before the next spec is indexed, so a page can show it while the rest still run."""

from __future__ import annotations

import threading

from core.schema.documents import Document
from core.workbench import Corpus, run_chunkers
from tests.unit.test_run_chunkers import DOC, SPECS, SlowEmbedder, services_with


def test_each_result_is_handed_over_before_the_next_spec_is_indexed(tmp_path, minilm):
    embedder = SlowEmbedder(minilm, delay=0.0)
    services = services_with(tmp_path, embedder)
    events: list[tuple[str, str]] = []
    handed: list[tuple[str, object, int, str]] = []  # spec, result, embedder calls so far, thread

    def on_result(spec, result):
        events.append(("result", spec))
        handed.append((spec, result, len(embedder.calls), threading.current_thread().name))

    results = run_chunkers(services, Corpus([DOC]), SPECS, on_result=on_result,
                           progress=lambda spec, i, n: events.append(("progress", spec)))

    assert [spec for spec, *_ in handed] == SPECS  # once each, in order, the failing spec included
    assert all(result is results[spec] for spec, result, *_ in handed)  # the very result returned at the end
    assert not handed[2][1].ok and handed[2][1].error  # no-such-chunker: its error, at once
    calls = {spec: n for spec, _, n, _ in handed}
    # paragraph was handed over after its own embedding and before recursive's began; the failed spec embeds nothing
    assert 0 < calls["paragraph"] < calls["recursive:theta=20"] == calls["no-such-chunker"]
    assert calls["no-such-chunker"] < calls["sentence:max_tokens=30"] == len(embedder.calls)
    for before, after in zip(SPECS, SPECS[1:]):  # the next spec's progress starts only after this one's result
        assert events.index(("result", before)) < events.index(("progress", after))
    assert {thread for *_, thread in handed} == {threading.current_thread().name}  # the page's thread


def test_a_cached_only_spec_the_workspace_lacks_is_not_handed_over(tmp_path, minilm):
    services = services_with(tmp_path, minilm)
    corpus = Corpus([Document("ac", "Nordwind 225B", DOC.text)])
    run_chunkers(services, corpus, ["paragraph"])
    handed: list[str] = []
    restored = run_chunkers(services, corpus, ["recursive:theta=20", "paragraph"], cached_only=True,
                            on_result=lambda spec, result: handed.append(spec))
    assert handed == list(restored) == ["paragraph"]


def test_a_chat_chunkers_calls_are_counted_like_chops(tmp_path, minilm):
    """LumberChunker asks the chat client, not CHOP's CNM backend: its calls are the run's LLM calls too (the bench
    counts them from the chunker's needs, and so does Chunk & compare)."""
    from tests.support.fakes import ScriptedChat, hashed_answers
    from tests.unit.test_lumber import TEXT

    services = services_with(tmp_path, minilm)
    chat = ScriptedChat(hashed_answers)
    services.provided["chat"] = chat.client()
    results = run_chunkers(services, Corpus([Document("ac", "Nordwind 225B", TEXT)]),
                           ["lumber:group_tokens=60", "paragraph"])
    assert results["lumber:group_tokens=60"].llm_calls == len(chat.requests) > 0
    assert results["paragraph"].llm_calls == 0
