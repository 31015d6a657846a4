"""What the embedder never reads: where a chunk's unread part starts in the document, the question words a chunk
holds only there, and the greyed part in Chunk & compare's text view. The real bundled MiniLM (256 word pieces)."""

from __future__ import annotations

from types import SimpleNamespace

from components.html import chunk_spans_html
from core.schema.chunks import Chunk
from core.workbench import unread_part, unread_parts, words_only_unread

HEAD = "The air filter should be cleaned every two weeks, and the drain pan emptied daily. " * 20
TEXT = "Intro. " + HEAD + "The warranty covers the compressor for five years."


def _chunk(prefix: str = "") -> Chunk:
    start = TEXT.index("The air")
    chunk = Chunk("ac", start, len(TEXT), TEXT[start:], 400, 0)
    chunk.prefix = prefix
    return chunk


def test_the_unread_part_starts_where_the_embedder_stops_reading(minilm):
    services = SimpleNamespace(embedder=minilm)
    plain = unread_part(services, _chunk())
    assert _chunk().start < plain.start < len(TEXT) and plain.pieces > 0
    read = TEXT[_chunk().start : plain.start]
    assert len(minilm.offsets(read)) == minilm.max_pieces - 2  # exactly the pieces that fit
    prefixed = unread_part(services, _chunk(prefix="Air conditioner 225B: user manual"))
    assert prefixed.start < plain.start and prefixed.pieces > plain.pieces  # the prefix is read first
    short = Chunk("ac", 0, 6, "Intro.", 2, 1)
    assert unread_part(services, short) == type(plain)(6, 0)
    assert unread_parts(services, [short, _chunk()]) == {"ac#0": (plain.start, plain.pieces)}


def test_question_words_only_in_the_unread_part_are_named(minilm):
    services = SimpleNamespace(embedder=minilm)
    words = words_only_unread(services, _chunk(), "How long is the warranty on the filter?")
    assert words == ["warranty"]  # "filter" is read too; "How", "is", "the", "on" are stop words
    assert words_only_unread(services, Chunk("ac", 0, 6, "Intro.", 2, 1), "warranty") == []


def test_the_text_view_greys_the_unread_part_only():
    chunk = Chunk("ac", 0, len(TEXT), TEXT, 400, 0)
    cut = TEXT.index("The warranty")
    greyed = chunk_spans_html(TEXT, [chunk], 0, len(TEXT), {"ac#0": (cut, 12)})
    assert greyed.count('class="unread"') == 1 and "12 word pieces" in greyed
    assert greyed.split('class="unread"')[1].split(">", 1)[1].startswith("The warranty covers")
    assert 'class="unread"' not in chunk_spans_html(TEXT, [chunk], 0, len(TEXT))
    assert 'class="unread"' not in chunk_spans_html(TEXT, [chunk], 0, len(TEXT), {"ac#0": (len(TEXT), 0)})
