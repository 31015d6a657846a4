"""The settings a library export carries (issue 39, item 5): a visitor's export holds the visitor's choices and
nothing of the operator's (addresses, the reranker's password, model paths, limits); a local server's own export
keeps the operator's fields but no credentials in any address. Real zips of a real library."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from core.infra.workspace import Workspace
from core.ingest.library import Library, new_library_id
from core.outputs.archive import export_archive, import_archive
from core.settings import ADDRESS_FIELDS, VISITOR_FIELDS, Settings

PASSWORD = "pw-CANARY-rerank-7d21"
OPERATOR = {
    "rerank_model": f"https://op:{PASSWORD}@rerank.internal:9000/v1",
    "embedder_base_url": f"http://op:{PASSWORD}@emb.internal/v1",
    "model_server_url": f"http://op:{PASSWORD}@llm.internal/v1",
    "chroma_server": f"op:{PASSWORD}@chroma.internal:8000",
    "scorer_model": "/srv/operator-models/scorer",
    "model_name": "/srv/operator-models/chat.gguf",
    "max_upload_mb": 7,
}


@pytest.fixture()
def library(tmp_path) -> tuple[Workspace, Library]:
    ws = Workspace.open(tmp_path / "ws")
    lib = Library(ws.uploads, new_library_id())
    lib.add([("notes.md", b"# Notes\n\nA visitor's own document.")])
    return ws, lib


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_a_visitors_export_carries_none_of_the_operators_addresses_paths_or_limits(library, tmp_path):
    ws, lib = library
    settings = Settings(workspace=str(ws.root), top_k=9, rerank="model", **OPERATOR)
    data = export_archive(ws, settings, [lib.id])
    files = members(data)
    leaked = [name for name, body in files.items() if PASSWORD.encode() in body or b"operator-models" in body
              or b".internal" in body]
    assert leaked == []
    exported = json.loads(files["settings.json"])
    assert set(exported) == set(VISITOR_FIELDS) - {"workspace"}
    assert exported["top_k"] == 9 and exported["rerank"] == "model"
    report = import_archive(data, Workspace.open(tmp_path / "fresh"))  # still a settings file an import reads
    assert report.settings is not None and report.settings.top_k == 9 and report.settings.rerank_model == ""


def test_an_operators_own_export_keeps_every_address_without_its_credentials(library):
    ws, lib = library
    settings = Settings(workspace=str(ws.root), **OPERATOR)
    files = members(export_archive(ws, settings, [lib.id], operator_fields=True))
    assert [name for name, body in files.items() if PASSWORD.encode() in body or b"op:" in body] == []
    exported = json.loads(files["settings.json"])
    assert {k: exported[k] for k in ADDRESS_FIELDS} == {
        "rerank_model": "https://rerank.internal:9000/v1", "embedder_base_url": "http://emb.internal/v1",
        "model_server_url": "http://llm.internal/v1", "chroma_server": "chroma.internal:8000"}
    assert exported["scorer_model"] == OPERATOR["scorer_model"] and exported["max_upload_mb"] == 7
    assert "workspace" not in exported


def test_a_chroma_server_address_is_shown_without_its_credentials(tmp_path):
    """Bench reports record the store (`StoreSettings.describe`) and a bad address is an error line: neither
    carries a password typed into the Chroma server setting."""
    from core.infra.errors import ChunkLensError
    from core.services import build_services
    from core.settings import parse_host_port
    from core.store.index import StoreSettings

    host, port = parse_host_port(OPERATOR["chroma_server"])
    assert StoreSettings(host=host, port=port).describe() == "chroma server chroma.internal:8000"
    with pytest.raises(ChunkLensError) as caught:
        build_services(Settings(workspace=str(tmp_path), chroma_server=f"op:{PASSWORD}@chroma.internal:port"),
                       needs=())
    assert PASSWORD not in str(caught.value) and "chroma.internal" in str(caught.value)
