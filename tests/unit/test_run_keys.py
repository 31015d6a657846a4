"""Chunk runs (and so collections, the bench memo and a session's runs) are keyed by the documents as chunked:
their text and every field a chunker may read. One text imported by two libraries under two titles, outlines or
file names is chunked for each on its own terms, never served the other's prefixes or tags; the same documents
again are served from the cache; hand edits saved under the old text-only key are found again."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.methods.chop.edits import CnmEdit, EditLog
from core.methods.chop.extract import ExtractCnm
from core.outputs.export import records
from core.pipeline import chunk_documents, corpus_fingerprint, run_key
from core.schema.documents import Document, Segment

TEXT = ("Charge the battery for three hours before first use. Press the button halfway to focus, then fully.\n\n"
        "Clean the lens with the supplied cloth. Keep it away from water and sand.\n\n") * 2
CAMERA, DRILL = "Lumora X100 Digital Camera user manual", "Brandco Z9 Cordless Drill user manual"
PREFIXED = "naive-500t:size=30:overlap=5:prefix=title"

#: a value other than the default for every keyed field of `Document`: a field added to `Document` fails
#: `test_every_document_field_is_keyed_or_said_unread` until it is given one here or a reason in UNKEYED_FIELDS
CHANGED = {
    "doc_id": "other",
    "title": "Another title",
    "text": TEXT + "More.",
    "source": "another-file.md",
    "page_starts": [0, 40],
    "segments": [Segment("a", "A", 0, 10), Segment("b", "B", 10, len(TEXT))],
    "outline": [(0, 1, "Charging")],
    "cnm": {"category": "Digital Camera", "model": "Lumora X100"},
    "loader": "pdfium",
}


def test_every_document_field_is_keyed_or_said_unread():
    from core.pipeline import UNKEYED_FIELDS, document_key

    names = {f.name for f in dataclasses.fields(Document)}
    assert names == set(CHANGED) | set(UNKEYED_FIELDS), "a Document field is neither keyed nor said unread"
    base = Document("d1", CAMERA, TEXT)
    for name, value in CHANGED.items():
        changed = replace(base, **{name: value})
        assert corpus_fingerprint([changed]) != corpus_fingerprint([base]), f"{name} is not keyed"
        assert run_key([changed], "id") != run_key([base], "id")
    for name in UNKEYED_FIELDS:
        assert document_key(replace(base, **{name: ["anything"]})) == document_key(base)
    # a segment's own fields (its title, its gold tags, its pages) are keyed with the stream
    stream = replace(base, segments=[Segment("a", "A", 0, 10), Segment("b", "B", 10, len(TEXT))])
    for seg in (Segment("b", "Other", 10, len(TEXT)), Segment("b", "B", 10, len(TEXT), {"model": "Z9"}),
                Segment("b", "B", 10, len(TEXT), page_starts=(0, 5))):
        assert document_key(replace(stream, segments=[stream.segments[0], seg])) != document_key(stream)


def test_the_same_text_under_another_title_is_chunked_for_its_own_title(tmp_path):
    """Library A imported the text as a camera manual, library B as a drill's: B's prefixes, CHOP tags and export
    name B's title (the workspace's chunk-run cache served A's, keyed by doc id and text only)."""
    camera, drill = Document("d1", CAMERA, TEXT), Document("d1", DRILL, TEXT)
    for spec, context in ((PREFIXED, ChunkerContext()), ("chop", ChunkerContext(llm=ExtractCnm()))):
        first = chunk_documents([camera], make_chunker(spec, context), tmp_path)
        second = chunk_documents([drill], make_chunker(spec, context), tmp_path)
        assert not second.from_cache, spec
        assert all("Z9" in c.prefix and "X100" not in c.prefix for c in second.chunks), spec
        assert all("X100" in c.prefix for c in first.chunks), spec
        exported = list(records({spec: second.chunks}, [drill]))
        assert all(r["metadata"]["title"] == DRILL and "Z9" in r["metadata"]["prefix"] for r in exported)
    tags = chunk_documents([drill], make_chunker("chop", ChunkerContext(llm=ExtractCnm())), tmp_path).chunks
    assert {c.meta["cnm"]["model"] for c in tags} == {"Brandco Z9"}


def test_another_outline_gives_its_own_heading_prefixes(tmp_path):
    charging, cleaning = (Document("d1", CAMERA, TEXT, outline=[(0, 1, title)]) for title in ("Charging", "Cleaning"))
    spec = "naive-500t:size=30:overlap=5:prefix=headings"
    chunk_documents([charging], make_chunker(spec), tmp_path)
    again = chunk_documents([cleaning], make_chunker(spec), tmp_path)
    assert not again.from_cache and all("Cleaning" in c.prefix and "Charging" not in c.prefix for c in again.chunks)


def test_the_same_documents_again_are_served_from_the_cache(tmp_path):
    """Equal documents read again (an outline back from disk as lists, a new loading note) hit the cache."""
    doc = Document("d1", CAMERA, TEXT, source="x100.pdf", page_starts=[0, 90], outline=[(0, 1, "Charging")],
                   cnm={"category": "Digital Camera"})
    read_back = Document("d1", CAMERA, TEXT, source="x100.pdf", page_starts=[0, 90], outline=[[0, 1, "Charging"]],
                         cnm={"category": "Digital Camera"}, notes=["read as cp1252"])
    for spec, context in ((PREFIXED, ChunkerContext()), ("chop", ChunkerContext(llm=ExtractCnm()))):
        first = chunk_documents([doc], make_chunker(spec, context), tmp_path)
        again = chunk_documents([read_back], make_chunker(spec, context), tmp_path)
        assert not first.from_cache and again.from_cache, spec
        assert [c.to_dict() for c in again.chunks] == [c.to_dict() for c in first.chunks]


def test_hand_edits_saved_under_the_text_only_key_are_found_under_the_new_one(tmp_path):
    from core.pipeline import text_only_run_key
    from core.workbench import edits_key

    docs, identity = [Document("d1", CAMERA, TEXT)], "chop|extract"
    log = EditLog(tmp_path / "edits")
    old = text_only_run_key(docs, identity)
    log.append(old, "chop", [CnmEdit("d1#0", continuity=False)])
    key = edits_key(log, docs, identity)
    assert key == run_key(docs, identity) != old
    assert [[e.chunk_id for e in b] for b in log.batches(key)] == [["d1#0"]] and log.run_keys() == [key]
    log.append(key, "chop", [CnmEdit("d1#1", continuity=True)])
    assert edits_key(log, docs, identity) == key and len(log.batches(key)) == 2  # moved once, then kept
