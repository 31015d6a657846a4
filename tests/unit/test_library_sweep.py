"""What a process killed mid-write (`kill -9`) leaves in a library is cleared by the next write: temporary files
of dead processes and a document stored but never listed; a live writer's temporary file and a damaged
document's kept upload stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from core.infra.storage import stale_temporaries
from core.ingest.library import Library, new_library_id


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_write_clears_what_a_killed_process_left(tmp_path):
    lib_id = new_library_id()
    first = Library(tmp_path, lib_id)
    first.add([("kept.txt", b"Kept and listed.")])
    root, dead = first.root, _dead_pid()
    # killed between storing a document and listing it, and in the middle of two atomic writes
    (first.texts / "ghost.json").write_text(json.dumps({"doc_id": "ghost", "title": "g", "text": "x"}))
    (first.originals / "ghost.txt").write_bytes(b"x")
    dead_tmp = root / f".order.json.{dead}.0123456789ab.tmp"
    dead_tmp.write_text("[")
    (first.texts / f".kept.json.{dead}.0123456789ab.tmp").write_text("{")
    live_tmp = root / f".order.json.{os.getpid()}.0123456789ab.tmp"  # a writer of this process, still at work
    live_tmp.write_text("[")
    (first.originals / "damaged.pdf").write_bytes(b"%PDF")  # a damaged document's upload, kept on purpose
    assert {p.name for p in stale_temporaries(root)} == {dead_tmp.name}

    later = Library(tmp_path, lib_id)  # another session, after the restart
    assert [d.doc_id for d in later.documents()] == ["kept"]  # reading sweeps nothing
    assert (later.texts / "ghost.json").exists()
    later.add([("new.txt", b"A new upload.")])
    assert not (later.texts / "ghost.json").exists() and not (later.originals / "ghost.txt").exists()
    assert not dead_tmp.exists() and not list(later.texts.glob(".*.tmp"))
    assert live_tmp.exists() and (later.originals / "damaged.pdf").exists()
    assert [d.doc_id for d in later.documents()] == ["kept", "new"]
    assert (later.originals / "kept.txt").exists()


def test_nothing_is_swept_while_the_order_cannot_be_read(tmp_path):
    lib = Library(tmp_path, new_library_id())
    lib.add([("kept.txt", b"Kept and listed.")])
    (lib.root / "order.json").write_text("{damaged")
    later = Library(tmp_path, lib.id)
    with later._locked():  # the order is unreadable: every stored text may be a listed document
        pass
    assert (later.texts / "kept.json").exists()
