"""Library ids and folders (issue 39, lower findings): an id is checked whole, and a library's folder is made by
its first write, not by every visit that gets an id."""

from __future__ import annotations

import pytest

from core.ingest.library import Library, new_library_id, valid_library_id


@pytest.mark.parametrize("lib_id", ["abcdef12\n", "abcdef12\r\n", "\nabcdef12", "abc", "ABCDEF12", "abcdef12/..", ""])
def test_only_a_whole_library_id_is_valid(lib_id):
    assert not valid_library_id(lib_id)


def test_new_ids_are_valid():
    assert valid_library_id(new_library_id()) and valid_library_id("abcdef12")


def test_a_library_that_is_only_read_leaves_nothing_on_disk(tmp_path):
    lib = Library(tmp_path / "uploads", "abcdef12")
    assert lib.check() == [] and lib.documents() == [] and lib.dataset() is None
    assert lib.judged.questions() == [] and lib.last_run() is None
    assert not (tmp_path / "uploads").exists()
    lib.add([("fan.txt", b"Clean the filter monthly.")])
    assert [d.doc_id for d in Library(tmp_path / "uploads", "abcdef12").documents()] == ["fan"]
    lib.remove("fan")
    assert lib.documents() == []


def test_a_removed_documents_id_is_never_given_again_so_a_stale_tab_removes_nothing_new(tmp_path):
    lib = Library(tmp_path / "uploads", "abcdef12")
    lib.add([("fan.txt", b"Clean the blades.")])
    stale_choice = "fan"  # what another tab still lists and has selected
    lib.remove("fan")
    [again] = lib.add([("fan.txt", b"Oil the motor yearly.")]).added
    assert again.doc_id != "fan"
    lib.remove(stale_choice)  # the stale tab confirms its removal
    assert [d.text for d in Library(tmp_path / "uploads", "abcdef12").documents()] == ["Oil the motor yearly."]
    lib.clear()
    [third] = lib.add([("fan.txt", b"Dust it.")]).added
    assert third.doc_id not in ("fan", again.doc_id)
