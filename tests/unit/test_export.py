"""Chunk export: JSONL that LangChain and LlamaIndex load as they are, and CSV (`python -m core export`:
tests/integration/test_export_command.py)."""

from __future__ import annotations

import csv
import io
import json

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.ingest.datasets import joined, load_dataset
from core.methods.chop.rules import RuleCnm
from core.outputs.export import records, to_csv, to_jsonl
from core.pipeline import chunk_documents
from core.workbench import sample_folder
from tests.support.data import ROOT

SPECS = ["naive-500t", "chop", "mg:theta=120", "recursive:prefix=headings"]


def _export(documents):
    context = ChunkerContext(llm=RuleCnm())
    runs = {spec: chunk_documents(documents, make_chunker(spec, context)).chunks for spec in SPECS}
    return runs, to_jsonl(records(runs, documents))


def test_jsonl_loads_into_langchain_and_llamaindex_with_exact_spans():
    from langchain_core.documents import Document as LcDocument
    from llama_index.core.schema import TextNode

    docs = load_dataset(sample_folder()).documents[:2]
    runs, text = _export(docs)
    by_id = {d.doc_id: d for d in docs}
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == sum(len(c) for c in runs.values())
    for line in lines:
        lc = LcDocument(**line)
        node = TextNode(id_=line["id"], text=line["page_content"], metadata=line["metadata"])
        m = lc.metadata
        assert lc.page_content == by_id[m["doc_id"]].text[m["start"] : m["end"]] == node.text
        assert node.node_id == lc.id == line["id"] and node.metadata["chunker"] == m["chunker"]
        assert m["chunker"] in SPECS and m["title"] == by_id[m["doc_id"]].title
    chop = [ln["metadata"] for ln in lines if ln["metadata"]["chunker"] == "chop"]
    assert all(m["cnm"] and m["prefix"].startswith("[") for m in chop)
    firsts = [m for m in chop if m["index"] == 0]  # a document's first window has no decision before it
    assert len(firsts) == 2 and all(m["continuity"] is None for m in firsts)
    assert {m["continuity"] for m in chop if m["index"] > 0} <= {True, False}
    children = [ln["metadata"] for ln in lines if ln["metadata"]["parent_id"]]
    assert children and all(m["chunker"] == "mg:theta=120" and m["child"] for m in children)
    headed = [ln["metadata"] for ln in lines if ln["metadata"]["chunker"] == "recursive:prefix=headings"]
    assert all(m["prefix"].startswith(f"[{m['title']}") for m in headed)


def test_csv_has_one_row_per_chunk_with_the_cnm_spread_out():
    ds = joined(load_dataset(sample_folder()))
    runs, text = _export(ds.documents)
    recs = [json.loads(line) for line in text.splitlines()]
    rows = list(csv.DictReader(io.StringIO(to_csv(recs))))
    assert len(rows) == sum(len(c) for c in runs.values())
    stream = ds.documents[0].text
    for row in rows:
        assert row["page_content"] == stream[int(row["start"]) : int(row["end"])]
    chop = [r for r in rows if r["chunker"] == "chop"]
    assert any(r["continuity"] == "False" for r in chop)  # the joins of the stream the rules found
    for row, rec in zip(rows, recs):
        cnm = rec["metadata"]["cnm"] or {}
        assert row["cnm_model"] == (cnm.get("model") or "") and row["cnm_nouns"] == "; ".join(cnm.get("nouns") or [])
    assert {r["cnm_model"] for r in chop} >= {"225B", "226R", "T12"}


def test_every_chunk_of_a_pdf_carries_its_page_range_also_inside_a_joined_stream():
    from core.ingest.documents import join_documents, load_file
    from core.schema.documents import Document

    manual = load_file(ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf")
    notes = Document("notes", "notes", "Plain notes without pages. " * 40)
    chunker = make_chunker("naive-500t")
    for documents in ([manual, notes], [join_documents([notes, manual])]):
        runs = {"naive-500t": chunk_documents(documents, chunker).chunks}
        recs = [json.loads(line) for line in to_jsonl(records(runs, documents)).splitlines()]
        doc = documents[-1]
        paged = [r["metadata"] for r in recs if "page" in r["metadata"]]
        assert len(paged) >= 40 and any(m["page"] < m["page_end"] for m in paged)
        offset = doc.segments[-1].start if doc.segments else 0
        for m in paged:  # the first page holds the chunk's start, the last its last character
            starts = manual.page_starts
            assert starts[m["page"] - 1] <= m["start"] - offset and starts[m["page_end"] - 1] < m["end"] - offset
            assert m["page_end"] == len(starts) or m["end"] - offset <= starts[m["page_end"]]
        assert paged[-1]["page_end"] == len(manual.page_starts)
        rows = list(csv.DictReader(io.StringIO(to_csv(recs))))
        assert [r["page"] for r in rows if r["page"]] == [str(m["page"]) for m in paged]
