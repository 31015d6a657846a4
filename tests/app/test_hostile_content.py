"""Document text and file names are shown as text wherever the app draws them, and XSRF protection stays on (the
running server refusing an upload without the token: tests/integration/test_hostile_content_server.py).

The app is the real one (AppTest): a manual with script and img tags, uploaded under a file name that is itself
markup, chunked (coloured spans, CNM badges) and queried (hits with gold marks and prefixes). Every HTML body
the app sends, and every Markdown body allowed to carry HTML, must hold the escaped text and no live tag."""

from __future__ import annotations

import re
import tomllib

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.appflow import click
from tests.support.data import ROOT

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(document.cookie)">'
MANUAL = f"# Breeze 200 fan manual\n\nClean the blades monthly. {SCRIPT} Then {IMG} dry them.\n\n" \
         "Replace the filter of the Breeze 200 every year.\n"
NAME = "<img src=x onerror=alert(2)>.md"
LIVE_TAG = re.compile(r"<\s*(script|img|iframe|svg)\b", re.IGNORECASE)


def html_bodies(at: AppTest) -> list[str]:
    bodies = [h.proto.body for h in at.get("html")]
    return bodies + [m.value for m in at.markdown if m.proto.allow_html]


def test_markup_in_documents_and_names_is_shown_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["paragraph", "chop"]
    at.run().switch_page("pages/documents.py").run()
    at.file_uploader(key="uploader").set_value([(NAME, MANUAL.encode(), "text/markdown")]).run()
    at = click(at, "Add uploaded files")
    assert not at.error and "img-src-x-onerror-alert-2" in at.success[0].value
    assert list(at.dataframe[0].value["title"]) == ["<img src=x onerror=alert(2)>"]  # a table cell: plain text

    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    assert not at.exception and not at.error
    bodies = html_bodies(at)
    joined = " ".join(bodies)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in joined
    assert "&lt;img src=x onerror=&quot;alert(document.cookie)&quot;&gt;" in joined
    assert not [b for b in bodies if LIVE_TAG.search(b)]

    at.switch_page("pages/query.py").run()
    [question] = [t for t in at.text_input if t.label == "Question"]
    question.input(f"How do I clean the blades? {IMG}").run()
    at = click(at, "Ask every chunker")
    assert not at.exception
    bodies = html_bodies(at)
    assert any("&lt;img src=x onerror=" in b for b in bodies)  # hits show the escaped text
    assert not [b for b in bodies if LIVE_TAG.search(b)]


def test_no_page_lets_markdown_carry_html():
    """st.html bodies are built by components.html (escaped); Markdown never gets unsafe_allow_html."""
    sources = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "components").glob("*.py"))]
    assert [p.name for p in sources if "unsafe_allow_html" in p.read_text()] == []


def test_a_file_name_cannot_inject_markdown(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/documents.py").run()
    name = "![pixel](https:tracker.example.com?id=1) [click](javascript:alert(1)) $x$.txt"
    at.file_uploader(key="uploader").set_value([(name, b"", "text/plain")]).run()  # empty: an error line
    at = click(at, "Add uploaded files")
    [error] = at.error
    assert "\\!\\[pixel\\]\\(https\\:tracker" in error.value and "\\[click\\]\\(javascript\\:" in error.value
    assert "\\$x\\$" in error.value and "](" not in error.value


def test_xsrf_protection_is_not_turned_off():
    """Streamlit's XSRF protection is on unless config turns it off; ours says so explicitly, and does not ask
    for enableCORS = false (which is incompatible with XSRF protection)."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server = config.get("server", {})
    assert server.get("enableXsrfProtection") is True
    assert server.get("enableCORS", True) is True


PIXEL = "![x](http://127.0.0.1:9/x.png)"
LINK = "[link](javascript:alert(1))"


ESCAPED = {PIXEL: "\\!\\[x\\]\\(http\\://127\\.0\\.0\\.1\\:9/x\\.png\\)",
           LINK: "\\[link\\]\\(javascript\\:alert\\(1\\)\\)"}


def assert_shown_as_text(body: str, *names: str) -> None:
    """`body` holds `names` with every Markdown character escaped: no image to fetch, no link to click."""
    assert all(ESCAPED[n] in body for n in names) and "](" not in body


@pytest.mark.parametrize(("doc_id", "reference", "shows"), [
    (PIXEL, PIXEL, PIXEL),  # a doc id the library cannot store as a file name: the error names it
    ("fan", LINK, LINK),  # a reference to a document the set lacks: the error names it
])
def test_doc_ids_of_an_uploaded_qa_set_cannot_inject_markdown(tmp_path, monkeypatch, doc_id, reference, shows):
    """The Benchmark page's set upload: the set's doc ids are the uploader's to choose, and the page's lines about
    the set quote them."""
    import json

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    at.switch_page("pages/benchmark.py").run()
    corpus = json.dumps({"doc_id": doc_id, "text": "Clean the filter monthly."}).encode()
    questions = json.dumps({"qid": "1", "question": "How often?",
                            "references": [{"doc_id": reference, "start": 0, "end": 5}]}).encode()
    at.file_uploader(key="bench-corpus").set_value(("corpus.jsonl", corpus, "application/jsonl")).run()
    at.file_uploader(key="bench-questions").set_value(("questions.jsonl", questions, "application/jsonl")).run()
    at = click(at, "Load this set")
    assert not at.exception and not at.success
    [error] = at.error
    assert_shown_as_text(error.value, shows)


def test_a_set_name_in_an_archive_cannot_inject_markdown(tmp_path, monkeypatch):
    """The import panel names the QA set an archive brings; the archive chose that name."""
    import io
    import json
    import zipfile

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "chunklens-archive", "version": 1}))
        zf.writestr("libraries/abcdef12/texts/fan.json", json.dumps({"doc_id": "fan", "title": "fan",
                                                                     "text": "Clean the filter monthly."}))
        zf.writestr("libraries/abcdef12/dataset.json", json.dumps({"name": f"{PIXEL} {LINK}"}))
        zf.writestr("libraries/abcdef12/questions.jsonl", json.dumps(
            {"qid": "1", "question": "How often?", "references": [{"doc_id": "fan", "start": 0, "end": 5}]}))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/documents.py").run()
    at.file_uploader(key="archive_upload").set_value(("set.zip", buf.getvalue(), "application/zip")).run()
    at = click(at, "Import into this library")
    assert not at.exception and not at.error
    [success] = at.success
    assert "QA set" in success.value
    assert_shown_as_text(success.value, PIXEL, LINK)
