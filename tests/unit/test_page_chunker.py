"""The `page` chunker on real PDFs: one chunk per page, each exactly its page's text and on its page (in the export,
and inside a joined stream), an empty page gives none, and a document without pages is kept whole with one line
that the run carries, from a cache too."""

from __future__ import annotations

import json

import pytest

from core.chunkers.registry import make_chunker
from core.ingest.documents import join_documents, load_file
from core.outputs.export import records, to_jsonl
from core.pipeline import chunk_documents
from core.schema.chunks import check_spans, shown_notes
from core.schema.documents import Document
from tests.support.data import ROOT

DEBIAN = ROOT / "tests" / "fixtures" / "debian"
PAGELESS = "'{}' has no pages (only a PDF has them); kept whole as one chunk"


@pytest.fixture(scope="module")
def manual() -> Document:
    return load_file(DEBIAN / "libtasn1.pdf")


@pytest.fixture(scope="module")
def avrdude() -> Document:
    return load_file(DEBIAN / "avrdude.pdf")


def page_texts(doc: Document) -> list[str]:
    """Each page's text as the loader read it, trimmed (the reference the chunks are held to)."""
    edges = [*doc.page_starts, len(doc.text)]
    return [doc.text[a:b].strip() for a, b in zip(edges, edges[1:])]


def test_a_36_page_manual_gives_36_chunks_each_exactly_its_page(manual):
    assert len(manual.page_starts) == 36
    run = chunk_documents([manual], make_chunker("page"))
    chunks = run.chunks
    assert [c.text for c in chunks] == page_texts(manual)
    assert [manual.pages_of(c.start, c.end) for c in chunks] == [(n, n) for n in range(1, 37)]
    assert run.notes() == []
    recs = [json.loads(line)["metadata"] for line in to_jsonl(records({"page": chunks}, [manual])).splitlines()]
    assert [(m["page"], m["page_end"]) for m in recs] == [(n, n) for n in range(1, 37)]


def test_a_joined_stream_of_two_pdfs_gives_each_pdfs_pages(manual, avrdude):
    stream = join_documents([manual, avrdude])
    chunks = make_chunker("page").run(stream).chunks
    check_spans(chunks, [stream])
    expected = page_texts(manual) + page_texts(avrdude)
    assert [c.text for c in chunks] == [t for t in expected if t]
    second = stream.segments[1].start
    pages = [(c.start >= second, stream.pages_of(c.start, c.end)) for c in chunks]
    assert pages == [(False, (n, n)) for n in range(1, 37)] + [
        (True, (n, n)) for n, t in enumerate(page_texts(avrdude), 1) if t]


def test_an_empty_page_gives_no_chunk_and_moves_no_page_number():
    text = "First page text.\n\n \n\nThird page text.  "
    doc = Document("d", "d", text, page_starts=[0, 18, 20])
    chunks = make_chunker("page").run(doc).chunks
    assert [(c.text, doc.pages_of(c.start, c.end)) for c in chunks] == [
        ("First page text.", (1, 1)), ("Third page text.", (3, 3))]


def test_a_text_document_is_kept_whole_with_one_line_that_the_cached_run_says_again(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("\n  Clean the filter monthly.\n\nThe remote takes two AAA batteries.\n", encoding="utf-8")
    notes = load_file(path)
    (tmp_path / "runs").mkdir()
    for _ in range(2):  # the second run is read from the cache
        run = chunk_documents([notes], make_chunker("page"), tmp_path / "runs")
        assert [c.text for c in run.chunks] == [notes.text.strip()]
        assert shown_notes("page", run.notes()) == [f"page: {PAGELESS.format('notes.txt')}"]
    assert run.from_cache


def test_a_stream_says_which_of_its_documents_has_no_pages(manual):
    notes = Document("notes", "notes", "Plain notes without pages. " * 40)
    blank = Document("blank", "blank", " \n ")
    stream = join_documents([notes, manual, blank])
    result = make_chunker("page").run(stream)
    assert result.trace["notes"] == [PAGELESS.format("notes")]  # the blank one has nothing kept, nothing to say
    assert [c.text for c in result.chunks] == [notes.text.strip(), *page_texts(manual)]


def test_many_pageless_documents_show_five_lines_and_a_count():
    docs = [Document(f"d{i}", f"doc {i}", "Some text.") for i in range(8)]
    lines = shown_notes("page", chunk_documents(docs, make_chunker("page")).notes())
    assert lines[:5] == [f"page: {PAGELESS.format(f'doc {i}')}" for i in range(5)]
    assert lines[5:] == ["page: and 3 more like these"]


def test_page_takes_the_prefix_and_routing_of_the_other_chunkers(manual):
    chunker = make_chunker("page:prefix=title:retrieval=route")
    chunks = chunker.run(manual).chunks
    assert len(chunks) == 36 and all(c.prefix and c.prefix_place == "before" for c in chunks)
    assert chunker.retrieval_policy({manual.doc_id: manual.title}) is not None
    assert make_chunker("page:retrieval=route").identity == make_chunker("page").identity == "page"
