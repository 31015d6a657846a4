"""Docling's chunkers as peers (core/chunkers/peers/docling.py): the Docling document built from ChunkLens's own
reading (Markdown blocks, a PDF's pages and outline headings, paragraphs), chunks that are exact spans of the
document, the hybrid chunker on the bundled MiniLM's tokenizer, and nothing fetched with the network unreachable."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from functools import cache

import pytest
from hypothesis import HealthCheck, assume, example, given, settings

from core.chunkers.peers.docling import MINILM_PIECES, minilm_tokenizer
from core.chunkers.peers.docling_document import blocks_of, docling_document, outline_lines, source_of
from core.chunkers.registry import make_chunker
from core.evaluation.fidelity import fidelity_fields
from core.infra.errors import ConfigError
from core.pipeline import chunk_documents
from core.schema.documents import Document
from core.tokens import count_tokens
from tests.support.data import ROOT
from tests.support.offline import OFFLINE_SITE
from tests.unit.test_chunker_properties import TEXTS, manuals

#: (spec, the most MiniLM word pieces a chunk may hold: None for no cap)
DOCLING_SPECS = [("docling-hierarchical", None), ("docling-hybrid:max_tokens=32", 32),
                 ("docling-hybrid:max_tokens=24:merge_peers=false", 24)]
PDF = ROOT / "tests" / "fixtures" / "debian" / "libtasn1.pdf"

MARKDOWN = """# Nordwind F30 fan

Thank you for choosing a *Nordwind* fan. Read these instructions first.

## 1. Safety

- Never insert fingers through the grille.
- Unplug the fan before cleaning:
  1. switch it off;
  2. pull the plug.

| Setting | Speed |
|---|---|
| 1 | low |
| 3 | high |

```sh
fan --reset
```

### 1.1 Warnings

Do not use the fan near a bath.
Keep it dry.
"""


@cache
def pdf_document() -> Document:
    from core.ingest.documents import load_file

    return load_file(PDF)


def check_docling_spans(doc: Document, chunks, cap: int | None) -> None:
    """Each chunk its exact span, trimmed, counted, in order and apart; the text no chunk covers is whitespace or
    a heading (Docling keeps headings in a chunk's metadata, not its text); within the cap in word pieces."""
    text = doc.text
    headings = [(b.start, b.end) for b in blocks_of(doc) if b.kind == "heading"]
    covered = 0
    for i, c in enumerate(chunks):
        assert text[c.start:c.end] == c.text and c.text == c.text.strip() and c.index == i
        assert c.token_count == count_tokens(c.text)
        assert c.start >= covered, "chunks overlap or are out of order"
        uncovered = re.sub(r"\s", "", "".join(text[s:e] for s, e in _outside(covered, c.start, headings)))
        assert not uncovered, f"text dropped that is no heading: {uncovered[:80]!r}"
        covered = c.end
        joined_around = any(c.start < s and e < c.end for s, e in headings)  # a heading longer than the cap
        if cap is not None and not (c.meta["peer_text"] == "altered" and joined_around):
            assert minilm_tokenizer(cap).count_tokens(c.text) <= cap
    assert not re.sub(r"\s", "", "".join(text[s:e] for s, e in _outside(covered, len(text), headings)))


def _outside(start: int, end: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) less the spans."""
    out, pos = [], start
    for s, e in sorted(spans):
        if e <= pos or s >= end:
            continue
        if s > pos:
            out.append((pos, s))
        pos = max(pos, e)
    return out + ([(pos, end)] if pos < end else [])


#: a heading that ends with the words of the paragraph after it: Docling's chunk is that paragraph, not the heading
TITLE_THEN_CONTENTS = "# Nordwind 225B Split Air Conditioner User Manual Table of contents\n\nTable of contents"
#: a heading over HybridChunker's small caps: Docling leaves it out and merges the paragraphs on both sides of it
LONG_HEADING = " ".join(["# Nordwind 225B Air Conditioner - User Manual"] * 3)
MERGED_AROUND_A_LONG_HEADING = f"Table of contents\n\n{LONG_HEADING}\n\nTable of contents"


@pytest.mark.parametrize(("spec", "cap"), DOCLING_SPECS, ids=[s for s, _ in DOCLING_SPECS])
@pytest.mark.filterwarnings("ignore:Headers and captions")  # a long generated heading over these small caps
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS | manuals())
@example(text=TITLE_THEN_CONTENTS)  # the chunk was placed inside the heading, where its words stand first
def test_docling_chunks_are_exact_ordered_spans_that_leave_out_only_headings(spec, cap, text):
    """Headings within the cap: one longer makes HybridChunker merge across it (the next test)."""
    doc = Document("d", "d", text)
    if cap is not None:
        assume(sum(minilm_tokenizer(cap).count_tokens(b.text) for b in blocks_of(doc) if b.kind == "heading") < cap)
    result = make_chunker(spec).chunk(doc)
    check_docling_spans(doc, result.chunks, cap)
    # paragraphs, as written, but where a heading over the cap left the headings and its neighbours were merged
    assert all(c.meta["peer_text"] in ("same", "whitespace", "altered") for c in result.chunks)
    placement = result.trace["peer"]
    assert placement["unmatched"] == placement["inside_previous"] == 0
    assert placement["library_chunks"] == len(result.chunks)


@pytest.mark.filterwarnings("ignore:Headers and captions")
def test_items_merged_around_a_heading_over_the_cap_span_their_source_range():
    """Docling leaves a heading longer than `max_tokens` out of the headings, so the paragraphs on both sides share
    (no) headings and are merged into one chunk whose text skips the heading: its span is the items' range, the
    heading inside, counted as altered (before: placed inside the heading, or nowhere)."""
    text = MERGED_AROUND_A_LONG_HEADING
    chunking = make_chunker("docling-hybrid:max_tokens=32").chunk(Document("d", "d", text))
    assert [(c.start, c.end, c.meta["peer_text"]) for c in chunking.chunks] == [(0, len(text), "altered")]
    assert chunking.trace["peer"]["unmatched"] == 0


def test_markdown_becomes_a_docling_document_of_its_blocks():
    doc = Document("f30", "F30", MARKDOWN, source="f30.md")
    assert source_of(doc) == "markdown"
    dl = docling_document(doc)
    assert [(t.label.value, t.text) for t in dl.texts] == [
        ("section_header", "Nordwind F30 fan"),
        ("text", "Thank you for choosing a *Nordwind* fan. Read these instructions first."),  # inline source kept
        ("section_header", "1. Safety"),
        ("list_item", "Never insert fingers through the grille."), ("list_item", "Unplug the fan before cleaning:"),
        ("list_item", "switch it off;"), ("list_item", "pull the plug."),
        ("code", "fan --reset\n"), ("section_header", "1.1 Warnings"),
        ("text", "Do not use the fan near a bath.\nKeep it dry.")]
    assert [t.level for t in dl.texts if t.label.value == "section_header"] == [1, 2, 3]
    outer, inner = dl.groups
    assert inner.parent.cref == "#/texts/4" and [c.cref for c in inner.children] == ["#/texts/5", "#/texts/6"]
    assert outer.parent.cref == "#/body" and all(dl.texts[i].enumerated for i in (5, 6))
    [table] = dl.tables
    assert (table.data.num_rows, table.data.num_cols) == (3, 2)
    assert [c.text for c in table.data.table_cells if c.column_header] == ["Setting", "Speed"]
    blocks = blocks_of(doc)
    assert all(doc.text[b.start:b.end].strip() == doc.text[b.start:b.end] for b in blocks)
    assert doc.text[blocks[0].start:blocks[0].end] == "# Nordwind F30 fan"


def test_hierarchical_chunks_are_docling_items_and_what_docling_rewrites_is_measured():
    """One chunk per item (the list as one); the table (as "row, column = value" triples) and the code (fenced
    without its language) are Docling's text, found nowhere in the document: measured as dropped, not placed."""
    from docling_core.transforms.chunker import HierarchicalChunker

    doc = Document("f30", "F30", MARKDOWN, source="f30.md")
    library = list(HierarchicalChunker().chunk(dl_doc=docling_document(doc)))
    assert [c.meta.headings for c in library] == [["Nordwind F30 fan"]] + [["Nordwind F30 fan", "1. Safety"]] * 3 \
        + [["Nordwind F30 fan", "1. Safety", "1.1 Warnings"]]
    assert library[2].text == "1, Speed = low. 3, Speed = high" and library[3].text.startswith("```\nfan --reset")
    run = chunk_documents([doc], make_chunker("docling-hierarchical"))
    chunks = run.chunks
    assert [c.text for c in chunks] == [
        "Thank you for choosing a *Nordwind* fan. Read these instructions first.",
        MARKDOWN[MARKDOWN.index("- Never"):MARKDOWN.index("pull the plug.") + len("pull the plug.")],
        "Do not use the fan near a bath.\nKeep it dry."]
    assert [c.meta["peer_text"] for c in chunks] == ["same", "whitespace", "whitespace"]
    assert run.traces["f30"]["peer"]["unmatched"] == 2
    fidelity = fidelity_fields([doc], run)
    assert 0.3 < fidelity["dropped_chars_share"] < 0.5 and fidelity["altered_chunks_share"] == pytest.approx(2 / 5)


def test_hybrid_merges_peers_under_one_heading_and_places_what_it_rewrote():
    doc = Document("f30", "F30", MARKDOWN, source="f30.md")
    merged = make_chunker("docling-hybrid").run(doc).chunks
    assert [c.meta["peer_text"] for c in merged] == ["same", "altered", "whitespace"]
    assert merged[1].text.startswith("- Never") and merged[1].text.endswith("```")  # list, table, code: one chunk
    apart = make_chunker("docling-hybrid:merge_peers=false").run(doc).chunks
    assert len(apart) == 3 and [c.text for c in apart][::2] == [c.text for c in merged][::2]
    assert apart[1].text.endswith("pull the plug.")  # the list alone; the table and code are Docling's text


def test_a_real_pdf_becomes_pages_and_outline_headings_through_both_chunkers():
    doc = pdf_document()
    assert source_of(doc) == "pdf" and len(doc.page_starts) == 36
    found = outline_lines(doc)
    assert len(found) == len(doc.outline) == 21  # every bookmark found as a line of its page, in the outline's order
    titles = {doc.text[s:e] for s, e, _ in found}
    assert "2.3 Simple parsing" in titles and "Appendix A Copying Information" in titles
    blocks = blocks_of(doc)
    assert all(doc.page_at(b.start) == doc.page_at(b.end - 1) for b in blocks)  # an item lies on one page
    dl = docling_document(doc)
    assert len(dl.pages) == 36
    assert [t.prov[0].page_no for t in dl.texts] == [doc.page_at(b.start) for b in blocks]
    for spec, cap in [("docling-hierarchical", None), ("docling-hybrid", MINILM_PIECES)]:
        result = make_chunker(spec).run(doc)
        check_docling_spans(doc, result.chunks, cap)
        assert result.trace["peer"]["unmatched"] == 0
        assert all(c.meta["peer_text"] in ("same", "whitespace") for c in result.chunks)
    assert len(make_chunker("docling-hierarchical").run(doc).chunks) == sum(b.kind == "text" for b in blocks)


def test_plain_text_is_one_item_per_paragraph():
    doc = Document("d", "notes", "Clean the filter.\nRinse it.\n\n\nPress the timer button.")
    assert source_of(doc) == "text"
    assert [(b.kind, b.text) for b in blocks_of(doc)] == [("text", "Clean the filter.\nRinse it."),
                                                          ("text", "Press the timer button.")]
    assert [c.text for c in make_chunker("docling-hierarchical").run(doc).chunks] == [
        "Clean the filter.\nRinse it.", "Press the timer button."]


def test_parameters_are_bounded_and_the_version_is_in_the_identity():
    hybrid = make_chunker("docling-hybrid")
    assert (hybrid.max_tokens, hybrid.merge_peers) == (MINILM_PIECES, True) == (256, True)
    from core.chunkers.peers import peer_versions

    version = peer_versions()["docling-core"]
    assert version and hybrid.identity.endswith(f":docling-core={version}")
    assert make_chunker("docling-hierarchical").identity == f"docling-hierarchical:v2:docling-core={version}"
    for spec, message in [("docling-hybrid:max_tokens=8", "docling-hybrid: max_tokens must be between 16 and 8192 "
                           "word pieces (got 8)"),
                          ("docling-hybrid:max_tokens=9000", "max_tokens must be between 16 and 8192 word pieces"),
                          ("docling-hybrid:merge_peers=maybe", "'maybe' is not a valid")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_chunker(spec)
    assert minilm_tokenizer(MINILM_PIECES).get_max_tokens() == 256


def test_each_snippet_is_python_that_names_its_parameters():
    hierarchical = make_chunker("docling-hierarchical").snippet()
    ast.parse(hierarchical)
    assert "chunker = HierarchicalChunker()" in hierarchical and "DocumentConverter()" in hierarchical
    for spec, shown in [("docling-hybrid", ("max_tokens=256", "merge_peers=True")),
                        ("docling-hybrid:max_tokens=100:merge_peers=false", ("max_tokens=100", "merge_peers=False"))]:
        snippet = make_chunker(spec).snippet()
        ast.parse(snippet)
        assert all(s in snippet for s in shown), snippet
        assert 'AutoTokenizer.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")' in snippet
        assert "chunks = [c.text for c in chunker.chunk(dl_doc=doc)]" in snippet
    headed = make_chunker("docling-hybrid:prefix=headings").snippet()
    assert "heading path" in headed  # what ChunkLens adds, said beside the library's code


OFFLINE_SCRIPT = """
import json
import socket
import sys

import core.catalog
from core.chunkers.registry import make_chunker
from core.ingest.documents import load_file
from core.schema.documents import Document
from tests.support.offline import REFUSED

socket.getaddrinfo  # the guard is in force from start-up (sitecustomize)
docs = [Document("f30", "F30", sys.argv[1], source="f30.md"), load_file(sys.argv[2])]
out = {spec: [len(make_chunker(spec).run(d).chunks) for d in docs]
       for spec in ("docling-hierarchical", "docling-hybrid")}
ours = list(REFUSED)
try:  # the library's own default tokenizer, for contrast: it reaches for the hub
    from docling_core.transforms.chunker import HybridChunker
    HybridChunker()
    default = "loaded"
except Exception as exc:
    default = type(exc).__name__
print(json.dumps({"chunks": out, "ours": ours, "default": default, "refused": REFUSED}))
"""


def test_both_run_with_the_network_unreachable_and_hf_hub_offline_unset(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update({"PYTHONPATH": f"{OFFLINE_SITE}{os.pathsep}{ROOT}", "HF_HOME": str(tmp_path / "hf"),
                "CHUNKLENS_TIKTOKEN_CACHE": str(tmp_path / "tiktoken")})
    proc = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT, MARKDOWN, str(PDF)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert shown["ours"] == []  # nothing tried: the tokenizer is the bundled MiniLM's, read from its folder
    assert all(n > 0 for counts in shown["chunks"].values() for n in counts)
    assert shown["default"] != "loaded" and shown["refused"]  # the default fetches, and the guard refused it
