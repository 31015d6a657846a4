"""The peers (core.chunkers.peers): the libraries' splitters as chunkers whose chunks are exact spans, placed from
the libraries' texts (never from their unchecked offsets), with what each library dropped or altered measured
(core.evaluation.fidelity), and nothing fetched from the network."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, example, given, settings

from core import text as T
from core.chunkers.base import ChunkerContext
from core.chunkers.peers import PEER_LIBRARIES, PeerChunker, peer_versions
from core.chunkers.peers.spans import Overlap, place_chunks
from core.chunkers.registry import REGISTRY, make_chunker
from core.evaluation.fidelity import altered_chunks_share, dropped_chars_share, fidelity_fields
from core.infra.errors import ConfigError
from core.pipeline import chunk_documents
from core.schema.chunks import check_spans as core_check_spans
from core.schema.documents import Document
from core.schema.runs import ChunkedRun
from core.tokens import count_tokens
from tests.support.data import ROOT
from tests.support.offline import OFFLINE_SITE
from tests.support.spans import check_spans
from tests.unit.test_chunker_properties import TEXTS, manuals
from tests.unit.test_peer_docling import DOCLING_SPECS

#: (spec, unit of the cap, cap, may overlap) for every peer, with caps small enough to bind (None: no cap)
PEER_SPECS = [
    ("langchain-recursive:chunk_size=120:chunk_overlap=30", "chars", 120, True),
    ("langchain-recursive:chunk_size=120:chunk_overlap=0", "chars", 120, False),
    ("langchain-recursive:length=tokens:chunk_size=30:chunk_overlap=8", "tokens", 30, True),
    ("semchunk:chunk_size=30", "tokens", 30, False),
    ("semchunk:chunk_size=30:overlap=8", "tokens", 30, True),
    ("text-splitter:capacity=120", "chars", 120, False),
    ("text-splitter:capacity=120:overlap=30:markdown=off", "chars", 120, True),
    ("text-splitter:length=tokens:capacity=30:markdown=on", "tokens", 30, False),
    ("chonkie-recursive:chunk_size=120", "chars", 120, False),
    ("chonkie-recursive:chunk_size=64:min_characters_per_chunk=4", "chars", 64, False),
    ("llamaindex-sentence:chunk_size=30:chunk_overlap=8", "tokens", 30, True),
    ("llamaindex-semantic", None, None, False),  # no size cap
    ("chonkie-semantic:chunk_size=120", None, None, False),  # a sentence longer than the cap is a chunk
]


#: repeated text whose chunks each have an earlier copy past the floor counted back in tokens
REPEATED = "The. The.\n \nThe.\n \nThe. The. The. The the the the the. The.\n \nThe.\n \nThe."
#: LangChain in characters: the first copy of its last chunk past the floor ended before the text does
PERIODIC = "The. The the the the the. " + "\n \n".join(["abcdefghij" * 3] * 4)
#: LangChain in tokens (30, overlap 8) gives "The the 3.5." alone, the end of its first chunk, as its second
OVERLAP_ALONE = ("The.\n \nThe. The. The. The.\n \nThe.\nThe.\nThe the 3.5.\n \n"
                 "The. The. The. The. The. The the the the the the the the the.")
#: ... and gives "The." alone, then the chunk that starts with it (its overlap), the split after it too long to join
OVERLAP_FIRST = ("The the the the the.\n\nThe.\n \nThe the the the the. The the the the the.  "
                 "abcdefghijabcdefghijabcdefghij  The.\n \nThe.")


def peer_names() -> list[str]:
    return sorted(name for name, cls in REGISTRY.items() if issubclass(cls, PeerChunker))


def test_every_peer_is_in_this_file():
    """Docling's peers are held to their own span test (tests/unit/test_peer_docling.py): headings are in their
    chunks' metadata, not their text, so the heading lines are covered by no chunk."""
    assert sorted({spec.split(":")[0] for spec, *_ in [*PEER_SPECS, *DOCLING_SPECS]}) == peer_names()


@pytest.mark.parametrize(("spec", "unit", "cap", "overlaps"), PEER_SPECS, ids=[s[0] for s in PEER_SPECS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS | manuals())
@example(text=REPEATED)  # LangChain in tokens: its second chunk was placed at an earlier copy, the last "The." left out
@example(text=PERIODIC)  # the same in characters
@example(text=OVERLAP_ALONE)  # a chunk inside the one before: left out, not unmatched
@example(text=OVERLAP_FIRST)  # a chunk inside the one after: left out, not unmatched
def test_peer_chunks_are_exact_ordered_spans_within_the_cap(spec, unit, cap, overlaps, text, cached_minilm):
    doc = Document("d", "d", text)
    result = make_chunker(spec, ChunkerContext(embedder=cached_minilm)).chunk(doc)
    chunks = result.chunks
    check_spans(text, chunks)  # exact, trimmed, in order, and every non-space character covered
    core_check_spans(chunks, [doc])
    # LangChain and LlamaIndex sum their pieces' token counts, and a piece joined to the next can count a token
    # more: 2 spared
    spared = 2 if spec.startswith(("langchain", "llamaindex")) and unit == "tokens" else 0
    for c in chunks:
        assert cap is None or (len(c.text) if unit == "chars" else c.token_count) <= cap + spared
        assert c.meta["peer_text"] in ("same", "whitespace")  # these libraries change whitespace at most
    if not overlaps:
        assert all(b.start >= a.end for a, b in zip(chunks, chunks[1:]))
    placement = result.trace["peer"]
    assert placement["unmatched"] == 0
    # a library that overlaps can give its overlap alone as a chunk, inside the one before: it is left out
    assert placement["inside_previous"] == 0 or overlaps
    assert placement["library_chunks"] == len(chunks) + placement["inside_previous"]


def test_langchain_chunks_are_placed_where_add_start_index_is_wrong():
    """LangChain's start_index searches from an estimate (previous start + length - overlap): the short paragraph
    "OK." is found inside the first chunk, which ends with the same text (langchain #21475)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    text = ("Unplug the unit, wait ten seconds, then plug it back in. OK.\n\nOK.\n\n"
            "Press and hold the reset button until the lamp blinks. OK.")
    langchain = RecursiveCharacterTextSplitter(chunk_size=64, chunk_overlap=20, add_start_index=True)
    said = [(d.metadata["start_index"], d.page_content) for d in langchain.create_documents([text])]
    assert said[1] == (57, "OK.")  # inside the first chunk: the wrong "OK."
    chunks = make_chunker("langchain-recursive:chunk_size=64:chunk_overlap=20").chunk(Document("d", "d", text)).chunks
    assert [c.text for c in chunks] == [t for _, t in said]
    assert [c.start for c in chunks] == [0, text.index("OK.\n\nPress"), text.index("Press")]
    check_spans(text, chunks)


def test_offsets_are_checked_before_they_are_used():
    text = "Reset the unit. Reset the unit. Reset the unit."
    pieces = ["Reset the unit.", "Reset the unit.", "Reset the unit."]
    placed = place_chunks(text, pieces, offsets=[0, 0, 999]).placed  # a repeated and an impossible offset
    assert [(p.start, p.end) for p in placed] == [(0, 15), (16, 31), (32, 47)]


def test_an_overlapping_chunk_is_placed_where_the_chunks_cover_the_text():
    """LangChain (30 tokens, overlap 8) gives REPEATED as two chunks; the second, "The.\\n \\nThe.", starts after
    the first with no overlap. Its first copy past the floor (8 + 2 tokens back from the first's end) starts inside
    the first chunk and ends before the text does: the last "The." was covered by no chunk. The copy that keeps the
    chunks contiguous to the end is taken, for an overlap in tokens or characters."""
    first = REPEATED[:59]
    for overlap in (Overlap(8, "tokens"), Overlap(40), Overlap(None)):
        placed = place_chunks(REPEATED, [first, "The.\n \nThe."], overlap=overlap).placed
        assert [(p.start, p.end) for p in placed] == [(0, 59), (62, len(REPEATED))]


def test_the_search_for_contiguous_chunks_is_bounded(monkeypatch):
    """Backing up is bounded (64 copies per chunk that lead nowhere): past it, each chunk is placed by the forward
    search alone, as it was before chunks were kept contiguous. SentenceSplitter's chunks of periodic text, each
    text found every 10 characters, tried from the floor (not the least overlap first): the first copies tried
    share too much, and some lead nowhere before a run that covers the text is found."""
    from core.chunkers.peers import spans

    periodic = "abcdefghij" * 150
    pieces, _ = make_chunker("llamaindex-sentence:chunk_size=40:chunk_overlap=8").split(Document("d", "d", periodic))
    assert len(pieces) == 47
    placed = place_chunks(periodic, pieces, overlap=Overlap(8, "tokens")).placed
    assert len(placed) == 47 and placed[-1].end == len(periodic)
    monkeypatch.setattr(spans, "_DEAD_ENDS_PER_CHUNK", 0)
    placed = place_chunks(periodic, pieces, overlap=Overlap(8, "tokens")).placed
    assert placed[-1].end < len(periodic)  # the forward search's placement: the end covered by no chunk


def test_a_chunk_that_is_a_neighbours_overlap_alone_is_left_out():
    """LangChain gives a chunk made of its overlap alone when the split after it is too long to join: the chunk's
    text lies inside the chunk before (LangChain's own start_index is -1), or begins the chunk after. It is left out
    and counted in `inside_previous`, not unmatched, and the other chunks are still placed so that they cover the
    text."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    langchain = RecursiveCharacterTextSplitter(chunk_size=30, chunk_overlap=8, length_function=count_tokens,
                                               add_start_index=True)
    said = [(d.metadata["start_index"], d.page_content) for d in langchain.create_documents([OVERLAP_ALONE])]
    assert said[1] == (-1, "The the 3.5.") and said[0][1].endswith("The the 3.5.")
    result = make_chunker("langchain-recursive:length=tokens:chunk_size=30:chunk_overlap=8").chunk(
        Document("d", "d", OVERLAP_ALONE))
    assert [c.text for c in result.chunks] == [said[0][1], said[2][1]]
    check_spans(OVERLAP_ALONE, result.chunks)
    assert result.trace["peer"] | {"library": "", "version": ""} == {
        "library": "", "version": "", "library_chunks": 3, "unmatched": 0, "inside_previous": 1}
    # the overlap alone, then the chunk that starts with it: the first left out, the second placed where it starts
    said = [d.page_content for d in langchain.create_documents([OVERLAP_FIRST])]
    assert said[1] == "The." and said[2].startswith("The.\n \nThe the")
    result = make_chunker("langchain-recursive:length=tokens:chunk_size=30:chunk_overlap=8").chunk(
        Document("d", "d", OVERLAP_FIRST))
    assert [c.text for c in result.chunks] == [said[0], said[2], said[3]]
    check_spans(OVERLAP_FIRST, result.chunks)
    assert (result.trace["peer"]["unmatched"], result.trace["peer"]["inside_previous"]) == (0, 1)


def test_a_librarys_offset_before_the_floor_is_not_taken():
    """An offset inside the previous chunk, where the text repeats, is refused for a library that never overlaps:
    the chunk is placed after the previous one, and the text's end is covered."""
    text = "ab ab ab ab"
    placed = place_chunks(text, ["ab ab", "ab ab"], offsets=[0, 3]).placed
    assert [(p.start, p.end) for p in placed] == [(0, 5), (6, 11)]


@dataclass
class _Rewrapping(PeerChunker):
    """A stand-in library that re-wraps each paragraph: whitespace runs become one space and, with `dehyphenate`,
    a word broken at a line end is joined ("fil-\\nter" -> "filter"), as PDF cleaners do."""

    name = "test-rewrapping"
    library = "pytest"
    dehyphenate: bool = False

    def split(self, doc: Document) -> tuple[list[str], None]:
        paragraphs = [doc.text[s:e] for s, e in T.paragraphs(doc.text)]
        if self.dehyphenate:
            paragraphs = [p.replace("-\n", "") for p in paragraphs]
        return [" ".join(p.split()) for p in paragraphs], None


REWRAPPED = ("Clean the air fil-\nter every two   weeks.\nRinse it in warm water.\n\n"
             "Press the mode button\n  twice to reach the timer.\n\nDry the fil-\nter in the shade.")


def _run(chunker: PeerChunker, docs: list[Document]) -> ChunkedRun:
    return chunk_documents(docs, chunker)


def test_a_library_that_changes_whitespace_gets_exact_spans_and_no_altered_chunks():
    doc = Document("d", "d", REWRAPPED)
    run = _run(_Rewrapping(), [doc])
    assert [c.text for c in run.chunks] == [REWRAPPED[s:e] for s, e in T.paragraphs(REWRAPPED)]
    assert [c.meta["peer_text"] for c in run.chunks] == ["whitespace"] * 3
    assert fidelity_fields([doc], run) == {"dropped_chars_share": 0.0, "altered_chunks_share": 0.0}


def test_a_library_that_alters_text_is_measured_and_its_spans_stay_exact():
    doc = Document("d", "d", REWRAPPED)
    run = _run(_Rewrapping(dehyphenate=True), [doc])
    check_spans(REWRAPPED, run.chunks)  # the source ranges, with the hyphens the library took out
    assert [c.meta["peer_text"] for c in run.chunks] == ["altered", "whitespace", "altered"]
    assert altered_chunks_share(run) == pytest.approx(2 / 3)
    assert dropped_chars_share([doc], run.chunks) == 0.0


def test_dropped_text_is_counted_for_every_chunker():
    text = "Keep this sentence. DROP-ME-NOW and this one too."
    doc = Document("d", "d", text)
    run = _run(_Rewrapping(), [doc])
    assert dropped_chars_share([doc], run.chunks) == 0.0
    kept = list(run.chunks)
    kept[0].end = kept[0].start + len("Keep this sentence.")  # as if the library had left the rest out
    left_out = sum(not ch.isspace() for ch in text[kept[0].end:])
    assert dropped_chars_share([doc], kept) == pytest.approx(left_out / sum(not ch.isspace() for ch in text))
    ours = chunk_documents([doc], make_chunker("paragraph"))
    assert fidelity_fields([doc], ours) == {"dropped_chars_share": 0.0, "altered_chunks_share": None}


def test_identity_names_the_librarys_version_and_sizes_are_bounded():
    chunker = make_chunker("semchunk")
    assert (chunker.chunk_size, chunker.overlap) == (512, 0)
    assert chunker.identity.endswith(f":semchunk={peer_versions()['semchunk']}")
    chonkie = make_chunker("chonkie-recursive")
    assert (chonkie.chunk_size, chonkie.min_characters_per_chunk) == (2048, 24)
    langchain = make_chunker("langchain-recursive")
    assert (langchain.chunk_size, langchain.chunk_overlap, langchain.length) == (4000, 200, "chars")
    for spec, message in [
        ("langchain-recursive:chunk_size=10", "chunk_size must be between 64 and 32768 characters"),
        ("langchain-recursive:chunk_size=100:chunk_overlap=60", "overlap must be between 0 and 50 characters"),
        ("langchain-recursive:length=words", "length must be one of chars, tokens (got 'words')"),
        ("semchunk:chunk_size=9000", "semchunk: chunk_size must be between 16 and 8192 tokens"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_chunker(spec)
    assert set(PEER_LIBRARIES) == {cls.library for name, cls in REGISTRY.items() if name in peer_names()}
    assert all(peer_versions().values())


OFFLINE_SCRIPT = """
import json
import re
import core.catalog
from core.chunkers.base import ChunkerContext
from core.chunkers.peers import PeerChunker
from core.chunkers.registry import REGISTRY, make_chunker
from core.schema.documents import Document
from core.store.embeddings import SentenceTransformerEmbedder
from tests.support.offline import REFUSED
import socket
try:
    socket.create_connection(("203.0.113.7", 443), timeout=1)
except OSError:
    pass
doc = Document("d", "guide.md",
               "# Guide\\n\\nClean the filter every two weeks.\\n\\n## Timer\\n\\nPress the timer button.")
out = {}
context = ChunkerContext(embedder=SentenceTransformerEmbedder())  # the bundled MiniLM, for the peers that embed
for name, cls in sorted(REGISTRY.items()):
    if issubclass(cls, PeerChunker):
        out[name] = [c.text for c in make_chunker(name, context).run(doc).chunks]
print(json.dumps({"chunks": out, "refused": REFUSED}))
"""


def test_every_peer_imports_and_runs_with_the_network_unreachable(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{OFFLINE_SITE}{os.pathsep}{ROOT}", "CHUNKLENS_TIKTOKEN_CACHE":
           str(tmp_path / "tiktoken"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert shown["refused"][0][1] == "203.0.113.7"  # the guard was in force: the one attempt is ours
    assert len(shown["refused"]) == 1, shown["refused"]
    assert sorted(shown["chunks"]) == peer_names()
    assert all(chunks for chunks in shown["chunks"].values())


def test_text_splitter_takes_its_markdown_splitter_for_markdown_and_its_offsets_are_characters():
    from core.chunkers.peers.text_splitter import is_markdown

    text = "# Café 🙂 guide\n\nSome *text* here.\n\n## Sub\n\n- a\n- b\n\nMore text that goes on and on."
    assert is_markdown(Document("d", "d", "plain", source="notes.md")) and not is_markdown(Document("d", "d", "x"))
    doc = Document("d", "d", text)
    auto = make_chunker("text-splitter:capacity=64").chunk(doc).chunks
    on = make_chunker("text-splitter:capacity=64:markdown=on").chunk(doc).chunks
    off = make_chunker("text-splitter:capacity=64:markdown=off").chunk(doc).chunks
    assert [c.text for c in auto] == [c.text for c in on] != [c.text for c in off]
    assert [c.start for c in on] == [0, text.index("## Sub")]  # a character offset, past the emoji: a section each
    check_spans(text, on)
    assert all(c.meta["peer_text"] == "same" for c in on)


def test_reports_show_the_fidelity_columns_when_the_report_has_them():
    from core.evaluation.report import markdown_table
    from core.evaluation.results import BenchReport, RunSummary

    def result(dropped, altered):
        return {"hit@1": 0.5, "mrr@1": 0.5, "n_chunks": 3, "mean_chunk_tokens": 40.0,
                "seconds": {"chunk": 0.1, "embed": 0.0, "index": 0.0, "query": 0.0},
                **({} if dropped is None else {"dropped_chars_share": dropped, "altered_chunks_share": altered})}

    report = {"dataset": "d", "n_questions": 2, "n_documents": 1, "embedder": "e", "k": [1],
              "results": {"semchunk": result(0.0, 0.25), "recursive": result(0.0, None)}}
    lines = markdown_table(BenchReport.of(report), ["hit"]).splitlines()
    assert lines[2].endswith("| wall s | dropped text | altered chunks |")
    assert lines[4].endswith("| 0.000 | 0.250 |") and lines[5].endswith("| 0.000 | - |")
    older = {**report, "results": {"recursive": result(None, None)}}  # made before the keys: no such columns
    assert "dropped text" not in markdown_table(BenchReport.of(older), ["hit"])
    own = {**report, "results": {"recursive": result(0.0, None)}}  # no peer, nothing dropped: no column of zeros
    assert "dropped text" not in markdown_table(BenchReport.of(own), ["hit"])
    own["results"]["recursive"]["dropped_chars_share"] = 0.125
    assert "| dropped text |" in markdown_table(BenchReport.of(own), ["hit"])
    row = RunSummary("semchunk", 3, 0, 40.0, 0.0, 0.1, False, 0, 0.0, 0.25).row()
    assert (row["dropped text"], row["altered chunks"]) == (0.0, 0.25)
