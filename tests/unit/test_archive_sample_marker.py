"""A library of the bundled sample set exports as a reference to the sample set, not a copy of its questions, and
such a reference imports as the sample set: `core.outputs.archive.sample_folder` named `core/sample_data/qa`, a
folder that does not exist, so the reference was never written and an archive carrying one pointed its library at
nothing."""

from __future__ import annotations

import io
import json
import zipfile

from core.infra.workspace import Workspace
from core.ingest.library import Library, new_library_id
from core.outputs import archive
from core.workbench import sample_folder


def test_the_archive_knows_the_bundled_sample_set():
    assert archive.sample_folder().resolve() == sample_folder().resolve()
    assert (archive.sample_folder() / "corpus.jsonl").is_file()


def test_a_sample_library_round_trips_as_a_reference(tmp_path):
    ws = Workspace.open(tmp_path / "a")
    lib = Library(ws.uploads, new_library_id())
    lib.load_dataset(sample_folder())
    data = archive.export_archive(ws, lib_ids=[lib.id])
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert json.loads(zf.read(f"libraries/{lib.id}/dataset.json")) == {"sample": "qa"}
        assert f"libraries/{lib.id}/questions.jsonl" not in zf.namelist()
    fresh = Workspace.open(tmp_path / "b")
    mine = Library(fresh.uploads, new_library_id())
    report = archive.import_archive(data, fresh, into=mine.id)
    assert "the sample set's questions" in report.added
    assert mine.dataset_folder() == sample_folder().resolve() and len(mine.dataset().questions) == 56
