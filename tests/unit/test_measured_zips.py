"""Zip sizes are measured, not taken from the archive's word (issue 50): a zip states each member's packed and
unpacked size, and CPython 3.11's zipfile believes both, so a 80 KB judged zip that stated a packed size of 330 KB
passed the 200:1 check and put 29 MB (about 380:1) in memory. Every zip the app reads (judged sets, workspace
archives, DOCX) now has each member's packed size measured from where the members lie in the file, and its inflated
bytes counted while it is read. The hostile zips are real: written by zipfile, then patched with struct
(tests.support.lying_zips)."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
import zipfile

import pytest

from core.infra.errors import DatasetError, DocumentError
from core.infra.workspace import Workspace
from core.ingest.documents import load_bytes
from core.ingest.judged import read_zip
from core.ingest.library import Library
from core.ingest.safezip import ArchiveError, ZipLimits, open_checked
from core.outputs.archive import import_archive
from tests.support.docx_files import zip_with_document_xml
from tests.support.lying_zips import restate, stated, zipped

MB = 2**20


def _sparse_text(size: int) -> str:
    """Spaces with a letter every 1,500: it deflates about 380:1, over the 200:1 a member may."""
    rng = random.Random(1)
    return "".join(" " * 1500 + rng.choice("abcdefghij") for _ in range(size // 1501))


def _judged_zip(text: str, folder: str = "set") -> bytes:
    corpus = (json.dumps({"doc_id": "big", "text": text}) + "\n").encode()
    questions = (json.dumps({"question": "q?", "references": [{"doc_id": "big", "start": 0, "end": 5}]}) + "\n")
    return zipped({f"{folder}/corpus.jsonl": corpus, f"{folder}/questions.jsonl": questions.encode()})


def _peak(call) -> tuple[BaseException, int]:
    """What `call` raised, and the most memory it held at once."""
    tracemalloc.start()
    try:
        with pytest.raises(Exception) as caught:
            call()
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def judged_bomb() -> bytes:
    """80 KB that inflate to 29 MB: refused from the directory, as long as the directory tells the truth."""
    data = _judged_zip(_sparse_text(29 * MB))
    packed, unpacked = stated(data, "set/corpus.jsonl")
    assert len(data) < 90 * 1024 and unpacked > 29_000_000 and unpacked / packed > 350
    return data


@pytest.fixture(scope="module")
def lying_judged_zip(judged_bomb) -> bytes:
    """The issue's case: the big member's packed size stated as 1/90 of its unpacked size."""
    return restate(judged_bomb, "set/corpus.jsonl", packed=stated(judged_bomb, "set/corpus.jsonl")[1] // 90)


def test_a_judged_zip_that_overstates_a_packed_size_is_refused_before_anything_is_inflated(lying_judged_zip):
    error, peak = _peak(lambda: read_zip(lying_judged_zip, 200 * MB))
    assert isinstance(error, DatasetError)
    assert str(error).startswith("member 'set/corpus.jsonl' states 329.9 KB packed, but the archive holds ")
    assert str(error).endswith("for it: its sizes are false (refused as a likely zip bomb)")
    assert "\n" not in str(error)
    assert peak < 2 * MB, f"{peak / MB:.1f} MB held: the member was inflated"


def test_a_workspace_archive_that_overstates_a_packed_size_writes_nothing(tmp_path):
    text = json.dumps({"doc_id": "a", "title": "a", "text": _sparse_text(12 * MB)}).encode()
    data = zipped({"manifest.json": json.dumps({"format": "chunklens-archive", "version": 1}).encode(),
                   "libraries/abcdef12/texts/a.json": text})
    _, unpacked = stated(data, "libraries/abcdef12/texts/a.json")
    lie = restate(data, "libraries/abcdef12/texts/a.json", packed=unpacked // 90)
    ws = Workspace.open(tmp_path / "ws")
    error, peak = _peak(lambda: import_archive(lie, ws, into="abcdef12"))
    assert isinstance(error, ArchiveError) and "its sizes are false" in str(error)
    assert peak < 2 * MB
    assert Library(ws.uploads, "abcdef12").documents() == []


def test_a_docx_that_overstates_a_packed_size_is_refused_before_its_reader_starts():
    data = zip_with_document_xml(4, b" " * MB, level=9)  # 4 MB of XML in about 4 KB: about 1000:1
    _, unpacked = stated(data, "word/document.xml")
    lie = restate(data, "word/document.xml", packed=unpacked // 50)  # states 50:1, under the 100:1 limit
    with pytest.raises(DocumentError, match=r"^lie\.docx: member 'word/document\.xml' states 81\.9 KB packed, but "
                                            r"the archive holds [\d.]+ KB for it: its sizes are false \(refused as a "
                                            r"likely zip bomb\)$"):
        load_bytes("lie.docx", lie)


def test_a_zip_that_understates_an_unpacked_size_is_refused_in_one_line(judged_bomb):
    lie = restate(judged_bomb, "set/corpus.jsonl", unpacked=1000)  # 29 MB stated as 1000 bytes
    error, peak = _peak(lambda: read_zip(lie, 200 * MB))
    assert isinstance(error, DatasetError)
    assert str(error).startswith("member 'set/corpus.jsonl' does not hold what the archive states (its size or "
                                 "checksum is false); the archive is refused")
    assert peak < 2 * MB


def test_reading_counts_inflated_bytes_and_stops_at_the_cap_whatever_the_member_states():
    """The count is the guard, not zipfile's habit of stopping at the stated size: a member whose stated size is
    raised after the directory was checked (as a reader that reads to the end of the stream would see it) still
    stops at the cap its measured packed size allows."""
    data = restate(zipped({"big.txt": b" " * (8 * MB)}), "big.txt", unpacked=MB)  # 8 MB stated as 1 MB
    archive = open_checked(io.BytesIO(data), ZipLimits())
    info = archive.members["big.txt"]
    cap = max(ZipLimits().ratio_floor, ZipLimits().max_ratio * archive.packed["big.txt"])
    assert cap < 2 * MB
    info.file_size = 8 * MB  # from here zipfile would hand over all 8 MB
    error, peak = _peak(lambda: archive.read(info))
    assert isinstance(error, ArchiveError)
    assert str(error).startswith("member 'big.txt' inflates past ")
    assert peak < cap + MB


def test_members_read_twice_count_once_and_an_honest_archive_reads_as_before():
    text = " ".join(f"w{i * 7919 % 100003}" for i in range(200_000)).encode()  # packs about 3:1
    data = zipped({"a/corpus.jsonl": text, "a/b.txt": b"hello"})
    archive = open_checked(io.BytesIO(data), ZipLimits(max_total_bytes=2 * len(text)))
    for _ in range(3):
        assert archive.read(archive.members["a/corpus.jsonl"]) == text
    assert archive.read(archive.members["a/b.txt"]) == b"hello"
    archive.verify()
    assert archive.inflated == len(text) + 5


def test_a_member_whose_data_runs_past_the_next_member_is_refused():
    """A packed size that reaches into the next member's header (the "overlapping members" of zip bombs that
    re-use one compressed stream) is false however small the ratio it gives."""
    data = zipped({"a.txt": b"first member " * 100, "b.txt": b"second member " * 100})
    packed, _ = stated(data, "a.txt")
    lie = restate(data, "a.txt", packed=packed + 40)
    with pytest.raises(ArchiveError, match=r"^member 'a\.txt' states \d+ bytes packed, but the archive holds \d+ "
                                           r"bytes for it: its sizes are false"):
        open_checked(io.BytesIO(lie), ZipLimits())


def test_the_measured_packed_size_is_what_lies_between_the_headers():
    data = zipped({"a.txt": b"alpha " * 1000, "b.txt": b"beta " * 1000})
    archive = open_checked(io.BytesIO(data), ZipLimits())
    for name in ("a.txt", "b.txt"):
        assert archive.packed[name] == zipfile.ZipFile(io.BytesIO(data)).getinfo(name).compress_size
