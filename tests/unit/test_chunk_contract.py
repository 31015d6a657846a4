"""The chunk contract around the chunkers: the registry refuses a second class under a taken name, check_spans
refuses a chunk that is not its document's slice, and a chunk-run cache edited on disk is never trusted."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from core.chunkers.base import Chunker
from core.chunkers.registry import REGISTRY, available, register
from core.infra.errors import ConfigError
from core.pipeline import chunk_documents, load_chunk_run, run_key
from core.schema.chunks import Chunk, Chunking, SpanMismatch, check_spans
from core.schema.documents import Document

DOCS = [Document("a", "A", "The filter sits behind the front panel.\n\nRinse it in warm water every two weeks."),
        Document("b", "B", "The remote needs two AAA batteries.\n\nPress the timer button to set the hours.")]


def test_a_second_class_under_a_taken_name_is_refused():
    available()  # the built-in chunkers are registered
    before = dict(REGISTRY)

    @dataclass
    class AnotherRecursive(Chunker):
        name = "recursive"

        def chunk(self, doc: Document) -> Chunking:
            return Chunking([])

    with pytest.raises(ConfigError, match="a chunker named 'recursive' is already registered"):
        register(AnotherRecursive)
    assert dict(REGISTRY) == before and REGISTRY["recursive"] is before["recursive"]
    assert register(before["recursive"]) is before["recursive"] and dict(REGISTRY) == before  # the same class: fine


def test_a_same_named_class_from_another_module_is_refused():
    available()
    before = dict(REGISTRY)
    held = before["recursive"]
    impostor = type(held.__name__, (Chunker,), {"name": "recursive", "__module__": "somebody.elses.plugin",
                                                "__qualname__": held.__qualname__,
                                                "chunk": lambda self, doc: Chunking([])})
    try:
        with pytest.raises(ConfigError):
            register(impostor)
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)  # whatever happened, the other tests see the real registry


def _chunk(doc: Document, start: int, end: int, text: str | None = None, doc_id: str | None = None) -> Chunk:
    text = doc.text[start:end] if text is None else text
    return Chunk(doc_id or doc.doc_id, start, end, text, len(text.split()))


def test_check_spans_accepts_exact_spans_and_refuses_anything_else():
    a, b = DOCS
    check_spans([_chunk(a, 0, 10), _chunk(b, 4, 20), _chunk(a, 5, 5)], DOCS)  # exact slices, empty ones too
    bad = [
        (_chunk(a, 0, 10, text="The filteR"), "is not its document's text"),  # edited text, same length
        (_chunk(a, 0, 10, text="The filter "), "is not its document's text"),  # one character more
        (_chunk(a, 0, 10, text=b.text[0:10]), "is not its document's text"),  # another document's slice
        (_chunk(a, 12, 10, text=""), "is not its document's text"),  # end before start
        (_chunk(a, len(a.text) - 3, len(a.text) + 2, text=a.text[-3:]), "is not its document's text"),  # past end
        (_chunk(a, 0, 10, doc_id="nope"), "names a document that is not there"),
    ]
    for chunk, message in bad:
        with pytest.raises(SpanMismatch, match=message):
            check_spans([_chunk(a, 0, 3), chunk], DOCS)
    with pytest.raises(SpanMismatch, match="a#0"):  # the message names the chunk
        check_spans([_chunk(a, 0, 3, text="xyz")], DOCS)


def test_an_edited_chunk_run_cache_is_not_trusted(tmp_path):
    from core.chunkers.registry import make_chunker

    chunker = make_chunker("recursive:theta=8")
    fresh = chunk_documents(DOCS, chunker, cache_dir=tmp_path)
    cache_file = tmp_path / f"{run_key(DOCS, chunker.identity)}.json"
    assert cache_file.exists() and not fresh.from_cache and len(fresh.chunks) >= 4
    reloaded = load_chunk_run(DOCS, chunker, tmp_path)
    assert reloaded is not None and reloaded.from_cache
    assert [c.to_dict() for c in reloaded.chunks] == [c.to_dict() for c in fresh.chunks]

    data = json.loads(cache_file.read_text(encoding="utf-8"))
    edited = data["chunks"][2]
    edited["text"] = edited["text"].replace("e", "E", 1)  # same length, same span: only the text differs
    assert edited["text"] != fresh.chunks[2].text
    cache_file.write_text(json.dumps(data), encoding="utf-8")

    assert load_chunk_run(DOCS, chunker, tmp_path) is None
    assert not cache_file.exists()  # the damaged entry is removed
    again = chunk_documents(DOCS, chunker, cache_dir=tmp_path)
    assert not again.from_cache
    assert [c.to_dict() for c in again.chunks] == [c.to_dict() for c in fresh.chunks]
    by_id = {d.doc_id: d for d in DOCS}
    assert all(c.text == by_id[c.doc_id].text[c.start : c.end] for c in again.chunks)
    assert cache_file.exists() and load_chunk_run(DOCS, chunker, tmp_path) is not None  # written anew, and good


def test_a_cache_whose_span_was_moved_is_not_trusted(tmp_path):
    """Editing the offsets instead of the text breaks the same contract."""
    from core.chunkers.registry import make_chunker

    chunker = make_chunker("paragraph")
    fresh = chunk_documents(DOCS, chunker, cache_dir=tmp_path)
    cache_file = tmp_path / f"{run_key(DOCS, chunker.identity)}.json"
    data = json.loads(cache_file.read_text(encoding="utf-8"))
    data["chunks"][0]["start"] += 1
    cache_file.write_text(json.dumps(data), encoding="utf-8")
    assert load_chunk_run(DOCS, chunker, tmp_path) is None and not cache_file.exists()
    assert [c.to_dict() for c in chunk_documents(DOCS, chunker, cache_dir=tmp_path).chunks] == [
        c.to_dict() for c in fresh.chunks]
