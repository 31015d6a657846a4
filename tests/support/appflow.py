"""The steps of an app session through Streamlit's AppTest, shared by the app tests: open a session on a workspace,
click a button, load the sample set, upload files, run the chunkers, hand-edit one of CHOP's tags and read the
edited tags back."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from core.methods.chop.edits import export_tags
from tests.support.data import ROOT

#: the chunkers the app's main flows run: fast ones, and CHOP with and without its CNM filter
FAST_SPECS = ["naive-500t", "recursive", "chop", "chop:retrieval=filter"]
#: the chunkers a `new_session` runs
SESSION_SPECS = ["naive-500t", "chop"]


def click(at: AppTest, label: str, timeout: float = 300) -> AppTest:
    [button] = [b for b in at.button if b.label.startswith(label)]
    return button.click().run(timeout=timeout)


def load_sample(at: AppTest) -> AppTest:
    at.switch_page("pages/documents.py").run()
    return click(at, "Load the sample set")


def new_session(monkeypatch, ws, lib: str | None = None) -> AppTest:
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = SESSION_SPECS
    if lib:
        at.query_params["lib"] = lib
    return at.run()


def upload(at: AppTest, files: list[tuple[str, bytes]]) -> AppTest:
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([(n, d, "text/plain") for n, d in files]).run()
    return click(at, "Add uploaded files")


def run_chunks(at: AppTest) -> AppTest:
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    assert not at.exception and not at.error
    return at


def edit_a_tag(at: AppTest) -> AppTest:
    """Change one chunk's model through the inspector's tag import (the data editor cannot be typed into by
    AppTest); the page saves the edit in the library."""
    chunks = at.session_state["runs"]["results"]["chop"].run.chunks
    tags = export_tags(chunks)
    tags[0]["cnm"] = {"category": "fan", "nouns": ["fan blade"], "model": "ZZ9", "confidence": 1.0}
    at.switch_page("pages/cnm_inspector.py").run()
    at.file_uploader(key="import-chop").set_value(("tags.json", json.dumps(tags).encode(), "application/json"))
    at = click(at.run(), "Apply imported tags")
    assert not at.error and "embedded again" in at.success[0].value
    return at


def edited_models(at: AppTest) -> list[str]:
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception
    return [c.meta["cnm"]["model"] for c in at.session_state["edited"][next(iter(at.session_state["edited"]))]
            .run.chunks]
