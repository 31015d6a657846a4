"""Contextual chunk headers (`prefix=title|headings`): Markdown headings, a PDF's outline, the prefix on chunks."""

from __future__ import annotations

import io

from core.chunkers.headers import HeadingPaths, header_texts, markdown_headings
from core.chunkers.registry import make_chunker
from core.ingest.documents import join_documents, load_bytes
from core.schema.documents import Document
from tests.support.pdfs import make_pdf

MD = ("# Nordwind 225B manual\n\nIntro.\n\n## 1. Safety\n\nWarnings.\n\n### 1.1 Children\n\nKeep away.\n\n"
      "```\n# not a heading\n```\n\n## 2. Cleaning #\n\nRinse the filter.\n")


def test_markdown_headings_skip_fenced_code_and_closing_hashes():
    heads = markdown_headings(MD)
    assert [(lv, t) for _, lv, t in heads] == [(1, "Nordwind 225B manual"), (2, "1. Safety"), (3, "1.1 Children"),
                                               (2, "2. Cleaning")]
    assert all(MD[o:].startswith("#") for o, _, _ in heads)


def test_the_heading_path_in_force_at_an_offset():
    paths = HeadingPaths(markdown_headings(MD))
    assert paths.at(0) == ("Nordwind 225B manual",)
    assert paths.at(MD.index("Keep away")) == ("Nordwind 225B manual", "1. Safety", "1.1 Children")
    assert paths.at(MD.index("Rinse")) == ("Nordwind 225B manual", "2. Cleaning")  # a level-2 heading pops level 3
    assert HeadingPaths([]).at(10) == ()


def test_headers_name_the_title_once_and_leave_joined_streams_untitled():
    doc = Document("m", "aircon-225B", MD)
    rinse = MD.index("Rinse")
    assert header_texts(doc, [rinse], "headings") == ["[aircon-225B > Nordwind 225B manual > 2. Cleaning]"]
    assert header_texts(doc, [rinse], "title") == ["[aircon-225B]"]
    assert header_texts(Document("m", "Nordwind 225B manual", MD), [0], "headings") == ["[Nordwind 225B manual]"]
    stream = join_documents([doc, Document("n", "fan-F30", "Plain text.")])
    assert header_texts(stream, [0], "title") == [""]
    assert header_texts(stream, [0], "headings") == ["[Nordwind 225B manual]"]


def test_pdf_outline_becomes_the_heading_path():
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(["Safety first.", "Clean the filter."]))))
    top = writer.add_outline_item(title="Model X200 manual", page_number=0)
    writer.add_outline_item(title="Cleaning", page_number=1, parent=top)
    out = io.BytesIO()
    writer.write(out)
    doc = load_bytes("x200.pdf", out.getvalue())
    assert doc.outline == [(0, 1, "Model X200 manual"), (doc.page_starts[1], 2, "Cleaning")]
    start = doc.text.index("Clean the filter")
    assert header_texts(doc, [start], "headings") == ["[x200 > Model X200 manual > Cleaning]"]


def test_any_chunker_but_chop_carries_the_prefix_and_keeps_its_spans():
    doc = Document("m", "aircon-225B", MD * 3)
    plain = make_chunker("recursive:theta=20").run(doc).chunks
    headed = make_chunker("recursive:theta=20:prefix=headings").run(doc).chunks
    assert [(c.start, c.end) for c in plain] == [(c.start, c.end) for c in headed]
    assert all(c.prefix.startswith("[aircon-225B") and c.embed_text.startswith(c.prefix + "\n") for c in headed)
    assert all(doc.text[c.start : c.end] == c.text for c in headed)
    assert not any(c.prefix for c in plain)
    # the default leaves spec and identity as they were; the prefix is part of both when set
    assert "prefix" not in make_chunker("recursive").spec and "prefix=headings" in make_chunker(
        "recursive:prefix=headings").identity
