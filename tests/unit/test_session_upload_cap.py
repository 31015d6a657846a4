"""One visitor's uploads are limited in total on the server (issue 39, item 11; per client, not per session, since
issue 50): Streamlit keeps every picked file in memory whether or not a form is submitted, and its browser-side
per-widget limits bind no one."""

from __future__ import annotations

import pytest
from starlette.exceptions import HTTPException
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from components.upload_cap import cap_session_uploads
from core.infra.uploads import SessionUploadsFull, check_session_total
from core.server_config import load_server_config

MB = 2**20


def _file(file_id: str, size: int) -> UploadedFileRec:
    return UploadedFileRec(file_id=file_id, name=f"{file_id}.pdf", type="application/pdf", data=b"x" * size)


def test_four_parked_uploads_stop_at_the_session_total():
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    cap_session_uploads(manager, 3 * MB)
    manager.add_file("a", _file("f1", MB))
    manager.add_file("a", _file("f2", MB))
    manager.add_file("a", _file("f3", MB))
    with pytest.raises(HTTPException) as refused:
        manager.add_file("a", _file("f4", MB))
    assert refused.value.status_code == 413
    assert "f4.pdf" in refused.value.detail and "3 MB limit per visitor" in refused.value.detail
    assert sum(len(f.data) for f in manager.file_storage["a"].values()) == 3 * MB  # the fourth was never kept
    manager.add_file("b", _file("g1", MB))  # another session has its own total
    manager.add_file("a", _file("f3", MB))  # the same file sent again replaces itself
    manager.remove_file("a", "f1")
    manager.add_file("a", _file("f4", MB))  # a removed upload frees its room


def test_two_sessions_of_one_client_share_the_total():
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    clients = {"tab1": "203.0.113.7", "tab2": "203.0.113.7", "other": "198.51.100.4"}
    cap_session_uploads(manager, 3 * MB, clients.__getitem__)
    manager.add_file("tab1", _file("f1", MB))
    manager.add_file("tab1", _file("f2", MB))
    manager.add_file("tab2", _file("g1", MB))
    with pytest.raises(HTTPException) as refused:  # a second tab brings no second allowance
        manager.add_file("tab2", _file("g2", MB))
    assert refused.value.status_code == 413 and "over the server's 3 MB limit per visitor" in refused.value.detail
    assert "g2" not in manager.file_storage["tab2"]
    manager.add_file("other", _file("h1", 3 * MB))  # another client has its own total
    manager.remove_session_files("tab1")  # a tab closed: its uploads free their room
    manager.add_file("tab2", _file("g2", 2 * MB))


def test_capping_twice_only_changes_the_cap():
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    cap_session_uploads(manager, MB)
    cap_session_uploads(manager, 2 * MB)
    manager.add_file("a", _file("f1", MB))
    manager.add_file("a", _file("f2", MB))
    with pytest.raises(HTTPException):
        manager.add_file("a", _file("f3", 1))


def test_the_total_is_one_line_and_the_operators_setting(tmp_path):
    line = r"big\.pdf: 150 MB would bring this visitor's uploads \(in every tab\) to 600 MB"
    with pytest.raises(SessionUploadsFull, match=line):
        check_session_total({"1": 150 * MB, "2": 150 * MB, "3": 150 * MB}, "4", 150 * MB, 200 * MB, "big.pdf")
    assert load_server_config(tmp_path / "none.toml", {}).max_session_upload_mb == 200
    env = {"CHUNKLENS_MAX_SESSION_UPLOAD_MB": "64"}
    assert load_server_config(tmp_path / "none.toml", env).max_session_upload_mb == 64


def test_streamlits_own_per_file_cap_comes_down_to_what_a_widget_accepts(monkeypatch):
    from streamlit import config

    from components.upload_cap import file_limit_mb, limit_each_file

    assert file_limit_mb(50, 200) == 200  # a ChunkLens archive may be 200 MB
    assert file_limit_mb(500, 1000) == 500 and file_limit_mb(50, 64) == 64
    before = config.get_option("server.maxUploadSize")
    try:
        config.set_option("server.maxUploadSize", 2048)
        limit_each_file(200)
        assert config.get_option("server.maxUploadSize") == 200
        limit_each_file(500)  # never raised
        assert config.get_option("server.maxUploadSize") == 200
    finally:
        config.set_option("server.maxUploadSize", before)
