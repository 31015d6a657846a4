"""The app's main flows in-process with Streamlit's AppTest: every page, on the project's sample set."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.appflow import FAST_SPECS, click, load_sample
from tests.support.data import ROOT


@pytest.fixture()
def app(app_workspace):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = FAST_SPECS
    return at.run()


def test_home_page_renders(app):
    assert not app.exception
    assert app.title[0].value == "ChunkLens"
    assert "naive-500t" in app.caption[0].value
    assert app.query_params["lib"]


def test_the_guided_demo_reaches_its_summary_without_touching_the_library(app):
    from core.workbench import DEFAULT_SPECS

    at = click(app, "Run the guided demo", timeout=900)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table["chunker"]) == DEFAULT_SPECS and table["wrong_doc@10"].between(0, 1).all()
    # every hit@1 with its interval, who is reliably ahead of whom, and how sure the leader is
    results = at.session_state["demo"].report["results"]
    for spec, cell in zip(table["chunker"], table["hit@1 95% interval"]):
        low, high = results[spec]["hit@1_ci95"]
        assert cell == f"[{low:.2f}, {high:.2f}]" and low <= results[spec]["hit@1"] <= high
    assert (table["reliably ahead on hit@1 of"] != "-").any()
    captions = [c.value.replace("\\", "") for c in at.caption]  # captions are Markdown-escaped
    assert any("one question moves hit@k by 0.018" in c and "On hit@1, " in c for c in captions)
    figures = [json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart")]
    assert any(f["type"] == "scatter" and "error_x" in f for f in figures)
    heat = [f for f in figures if f.get("colorscale") and f.get("y") == DEFAULT_SPECS]
    assert heat and len(heat[0]["x"]) == 7  # top-1 collisions, chunker by manual
    assert any(m.value.startswith("**CHOP's continuity decisions**") for m in at.markdown)
    assert "This library holds 0 document(s)" in at.caption[1].value  # the user's library is untouched
    assert "Download report" in [d.proto.label for d in at.get("download_button")]  # the HTML, made on a click
    again = click(at, "Run the guided demo")
    demo = again.session_state["demo"]
    assert all(r.run.from_cache and r.indexed.reused for r in demo.results.values())


def test_documents_page_loads_the_sample_set(app):
    at = load_sample(app)
    assert not at.exception
    assert "Loaded 7 documents and 56 questions" in at.success[0].value
    table = at.dataframe[0].value
    assert len(table) == 7 and set(table.columns) >= {"doc_id", "characters", "tokens"}
    at.multiselect[0].select("fan-F30").run()
    at = click(at, "Remove selected")
    assert len(at.dataframe[0].value) == 7 and "Remove 1 document(s) (fan\\-F30)" in at.warning[0].value
    at = click(at, "Cancel")
    assert len(at.dataframe[0].value) == 7 and not at.warning
    at = click(click(at, "Remove selected"), "Yes, remove them")
    assert len(at.dataframe[0].value) == 6


def run_chunkers(at: AppTest) -> AppTest:
    load_sample(at)
    at.switch_page("pages/chunks.py").run()
    return click(at, "Run chunkers")


def test_chunk_and_compare_runs_the_chosen_chunkers(app):
    at = run_chunkers(app)
    assert not at.exception and not at.error
    summary = at.dataframe[0].value
    assert list(summary["chunker"]) == FAST_SPECS and (summary["chunks"] > 0).all()
    unread = dict(zip(summary["chunker"], summary["unread by embedder"]))
    assert 0.2 < unread["naive-500t"] < 0.8  # 500-token windows, of which the MiniLM reads 256 word pieces
    assert unread["recursive"] < unread["naive-500t"]  # θ = 200 words: most chunks fit
    assert (summary["dropped text"] == 0.0).all() and summary["altered chunks"].isna().all()  # no peer among them
    htmls = [h.proto.body for h in at.get("html")]
    assert any("chunk 0" in h for h in htmls)  # coloured spans of the first chunk
    assert any('class="unread"' in h for h in htmls)  # naive-500t's windows run past the MiniLM's 256 pieces
    assert any("no vector reads" in c.value for c in at.caption)
    assert any("Category: " in h or "cat:" in h for h in htmls)  # CNM badges of the chop run
    # chop:retrieval=filter shares chop's chunks: its CNM section is drawn once, the variant says so
    assert [h.value for h in at.subheader].count("chop: CNM prefixes and continuity") == 1
    assert not any("retrieval=filter: CNM" in h.value for h in at.subheader)
    same = "chop\\:retrieval=filter\\: same chunks as chop"  # the specs are escaped: they are typed by the user
    assert any(c.value.startswith(same) for c in at.caption)
    exports = {d.proto.label: d for d in at.get("download_button")}
    assert {"Export chunks (JSONL)", "Export chunks (CSV)"} <= set(exports)
    again = click(at, "Run chunkers")  # a rerun is served from the caches
    assert again.dataframe[0].value["cached"].all()


def test_query_page_compares_every_chunker(app):
    at = run_chunkers(app)
    at.switch_page("pages/query.py").run()
    at.selectbox[0].select_index(1).run()
    at.checkbox[0].check().run()
    at = click(at, "Ask every chunker")
    assert not at.exception
    metrics = at.dataframe[0].value
    assert list(metrics["chunker"]) == FAST_SPECS and "hit@5" in metrics.columns
    htmls = " ".join(h.proto.body for h in at.get("html"))
    assert "question CNM (filter)" in htmls  # the CNM-aware run shows what it did with the question
    assert "wrong_doc@5" in metrics.columns and metrics["wrong_doc@5"].between(0, 1).all()
    assert "dense #" in htmls and "BM25 #" in htmls  # every hit shows where it stood on both sides
    # the default reranker (maxsim) is named, and each hit says where it stood before it
    assert any("reranked by maxsim (top 20, weight 0.4)" in c.value for c in at.caption)
    assert "reranked from #" in htmls
    grid = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(grid["y"]) == len(FAST_SPECS) and all("wrong_doc" in y for y in grid["y"])  # one row per chunker
    assert any("★" in cell for row in grid["text"] for cell in row)  # the gold document is marked
    log = at.dataframe[1].value
    assert len(log) == len(FAST_SPECS) and set(log["retrieval"]) == {"hybrid"}
    # another retrieval mode applies to every chunker at once, on the same runs (nothing is chunked again)
    at.session_state["settings"] = at.session_state["settings"].model_copy(update={"retrieval": "dense"})
    at.run()
    assert any("searched the same way: dense" in c.value for c in at.caption)
    at = click(at, "Ask every chunker")
    assert not at.exception and not at.error
    log = at.dataframe[1].value
    assert list(log["retrieval"]) == ["hybrid"] * len(FAST_SPECS) + ["dense"] * len(FAST_SPECS)
    # without a reranker, the hits keep the first stage's order and say nothing of one
    at.session_state["settings"] = at.session_state["settings"].model_copy(update={"rerank": "none"})
    at.run()
    assert not any("reranked by" in c.value for c in at.caption)
    at = click(at, "Ask every chunker")
    assert not at.exception and not at.error
    assert "reranked from #" not in " ".join(h.proto.body for h in at.get("html"))


def test_benchmark_page_runs_and_offers_downloads(app):
    at = load_sample(app)
    at.switch_page("pages/benchmark.py").run()
    at.multiselect[0].set_value(["naive-500t", "chop:retrieval=filter"]).run()
    at = click(at, "Run benchmark", timeout=600)
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["chunker"]) == {"naive-500t", "chop:retrieval=filter"}
    assert "hit@10" in table.columns and "seconds_embed" in table.columns
    assert [d.proto.label for d in at.get("download_button")] == ["Download CSV", "Download JSON", "Download report"]
    figures = [json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart")]
    [heat] = [f for f in figures if f["type"] == "heatmap" and len(f["x"]) == 7]  # top-1 collisions by manual
    assert set(heat["y"]) == {"naive-500t", "chop:retrieval=filter"}
    # is the difference real: each figure with its interval, and the pair on the chosen metric (hit@1)
    [pairs] = [f for f in figures if f["type"] == "heatmap" and f["x"] == f["y"]]
    assert pairs["x"] == ["naive-500t", "chop:retrieval=filter"] and pairs["text"][0][0] == ""
    dots = [f for f in figures if f["type"] == "scatter" and "error_x" in f]
    assert dots and all(len(f["error_x"]["array"]) == 2 for f in dots)
    report = at.session_state["bench_report"]
    assert any(c.value.startswith("On hit@1, ") for c in at.caption)
    assert {f"{m}_ci95_low" for m in ("hit@1", "hit@10")} <= set(table.columns)
    assert table.set_index("chunker").loc["naive-500t", "hit@1_ci95_low"] == report["results"]["naive-500t"][
        "hit@1_ci95"][0]


def test_cnm_inspector_lists_every_chop_chunk(app):
    at = run_chunkers(app)
    at.switch_page("pages/cnm_inspector.py").run()
    assert not at.exception
    assert any(b.label.startswith("Apply 0 edit") for b in at.button)
    assert [d.proto.label for d in at.get("download_button")] == ["Export tags (JSON)"]


def test_a_new_session_on_the_library_gets_the_last_runs_back(app):
    at = run_chunkers(app)
    at.switch_page("pages/documents.py").run()
    at.radio[0].set_value("one joined stream").run()
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    # the joined stream: CHOP's decisions against the six true joins, scored above the strip
    assert any(m.value.startswith("**Boundary precision") and "against the 6 true joins" in m.value
               for m in at.markdown)
    strips = [json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart")]
    hover = " ".join(t for f in strips if f.get("type") == "heatmap" for row in f.get("text", []) for t in row)
    assert "<b>found join</b>" in hover and "true join at" in hover
    # a reload or a new tab: a new session with the same ?lib= address, nothing in its session state
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    again.query_params["lib"] = at.query_params["lib"]
    again.run()
    again.switch_page("pages/query.py").run()
    assert not again.exception
    assert not any("Run the chunkers" in i.value for i in again.info)
    assert any(b.label == "Ask every chunker" for b in again.button)
    again.switch_page("pages/chunks.py").run()
    summary = again.dataframe[0].value
    assert list(summary["chunker"]) == FAST_SPECS and summary["cached"].all()
    assert again.session_state["joined"] is True  # the stream it was last chunked as


def test_two_sessions_never_share_documents(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    first = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    second = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    load_sample(first)
    assert first.query_params["lib"] != second.query_params["lib"]
    second.switch_page("pages/documents.py").run()
    assert any("No documents yet" in i.value for i in second.info)
    # the same library id (a reload of the first session's address) finds its documents again
    third = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    third.query_params["lib"] = first.query_params["lib"]
    third.run().switch_page("pages/documents.py").run()
    assert len(third.dataframe[0].value) == 7


def test_document_text_is_escaped(tmp_path, monkeypatch):
    from core.infra.workspace import Workspace
    from core.ingest.library import Library

    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["paragraph"]
    at.run()
    lib = Library(Workspace.open(tmp_path / "ws").uploads, at.query_params["lib"])
    lib.add([("evil.md", b"# Manual\n\n<script>alert('x')</script> <b>bold</b> & more text here.")])
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    body = " ".join(h.proto.body for h in at.get("html"))
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body and "<script>" not in body
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in body


def test_scorer_settings_persist_and_reach_the_lg_scorer(app, tmp_path):
    from core.services import build_services
    from core.settings import load_settings

    [mode] = [s for s in app.selectbox if s.label.startswith("LGMGC: end of text")]
    mode.select("paragraph")
    [dtype] = [s for s in app.selectbox if s.label == "LGMGC scorer precision"]
    dtype.select("bfloat16")
    at = click(app, "Save settings")
    assert not at.exception
    saved = load_settings(tmp_path / "ws")
    assert (saved.eos_mode, saved.scorer_dtype) == ("paragraph", "bfloat16")
    assert build_services(saved).get("scorer").key.endswith(":paragraph:bfloat16")
    assert "p(paragraph) bfloat16" in build_services(saved).get("scorer").label


def test_the_chat_model_is_a_setting_of_its_own_and_an_old_settings_file_keeps_its_choice(app, tmp_path):
    """The chat model (answers, generated questions, lumber) is chosen apart from the CNM backend; a settings file
    saved before it had a field of its own keeps the chat model its CNM backend picked."""
    import json

    from core.services import build_services
    from core.settings import load_settings

    [llm] = [s for s in app.selectbox if s.label == "CNM backend (CHOP)"]
    assert llm.value == "extract"
    [chat] = [s for s in app.selectbox if s.label.startswith("Chat model")]
    chat.select("llamacpp")
    at = click(app, "Save settings")
    assert not at.exception and "chat: llamacpp" in at.sidebar.caption[-1].value
    saved = load_settings(tmp_path / "ws")
    assert (saved.cnm_backend, saved.chat_backend) == ("extract", "llamacpp")
    assert build_services(saved, needs={"chat"}).chat.key.startswith("llamacpp:")
    path = tmp_path / "ws" / "settings.json"
    old = {k: v for k, v in json.loads(path.read_text()).items() if not k.endswith("_backend")} | {"llm": "openai"}
    path.write_text(json.dumps(old))  # saved before either backend had its own name: the CNM backend chose both
    assert load_settings(tmp_path / "ws").chat_backend == "openai"


def test_the_reranker_setting_persists(app, tmp_path):
    from core.settings import load_settings

    assert "reranked by maxsim (top 20" in app.sidebar.caption[-1].value  # the default
    [rerank] = [s for s in app.selectbox if s.label == "Rerank the top hits"]
    rerank.select("none")
    at = click(app, "Save settings")
    assert not at.exception
    assert load_settings(tmp_path / "ws").rerank == "none"
    assert "reranked" not in at.sidebar.caption[-1].value


def test_the_scorer_engine_setting_persists_and_picks_llama_cpp(app, tmp_path):
    from core.services import build_services
    from core.settings import load_settings

    [engine] = [s for s in app.selectbox if s.label == "LGMGC scorer engine"]
    engine.select("llamacpp")
    at = click(app, "Save settings")
    assert not at.exception
    saved = load_settings(tmp_path / "ws")
    assert saved.scorer_engine == "llamacpp"
    scorer = build_services(saved).get("scorer")
    assert scorer.key.startswith("scorer:llamacpp:") and "llama.cpp" in scorer.label


def test_an_embedding_server_typed_in_a_local_session_names_the_server_and_lasts_for_that_session(app, tmp_path):
    """The sidebar's Embedder and Embedding server base URL reach this session's OpenAI-compatible embedder; the
    cache key names the server, so its vectors never mix with another server's for the same model name. The address
    is not saved: a new session starts without it (docs/SECURITY.md)."""
    from core.services import build_services
    from core.settings import load_settings

    [spec] = [t for t in app.text_input if t.label == "Embedder"]
    assert spec.value == "bundled:minilm-fp32"  # the default
    spec.input("openai:nomic-embed-text")
    [url] = [t for t in app.text_input if t.label == "Embedding server base URL"]
    url.input(" http://127.0.0.1:11434/v1 ")
    at = click(app, "Save settings")
    assert not at.exception
    mine = at.session_state["settings"]
    assert (mine.embedder, mine.embedder_base_url) == ("openai:nomic-embed-text", "http://127.0.0.1:11434/v1")
    assert build_services(mine, needs=()).embedder.key == "openai:127.0.0.1:11434/v1:nomic-embed-text"
    saved = load_settings(tmp_path / "ws")
    assert (saved.embedder, saved.embedder_base_url) == ("openai:nomic-embed-text", "")
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    assert other.session_state["settings"].embedder_base_url == ""


def test_a_store_that_is_down_is_named_and_the_documents_stay(tmp_path, monkeypatch):
    """A Chroma server that does not answer is reported as the store's failure, not as bad settings, and the
    documents already added stay listed."""
    from bench.local_servers import free_port

    ws = tmp_path / "ws"
    monkeypatch.setenv("CHUNKLENS_WORKSPACE", str(ws))
    monkeypatch.setenv("CHUNKLENS_CHROMA_SERVER", f"127.0.0.1:{free_port()}")  # the operator's address
    at = load_sample(AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run())
    at.switch_page("pages/chunks.py").run()
    assert not at.exception
    [error] = [e.value for e in at.error]
    from components.html import md_escape

    assert error.startswith("Vector store unavailable: " + md_escape("cannot open chroma server 127.0.0.1:"))
    assert "Settings problem" not in error
    at.switch_page("pages/documents.py").run()
    assert len(at.dataframe[0].value) == 7


def test_benchmark_page_offers_the_chunkers_chosen_on_chunk_and_compare(app):
    """A chunker with parameters picked on Chunk & compare (kept in session_state["specs"]) is not one of the
    defaults: the Benchmark page's multiselect must offer it, not fail with StreamlitDefaultNotInOptionsError."""
    at = load_sample(app)
    at.switch_page("pages/chunks.py").run()
    [extra] = [t for t in at.text_input if t.label.startswith("More chunkers")]
    extra.input("recursive:theta=300").run()
    assert "recursive:theta=300" in at.session_state["specs"]
    at.switch_page("pages/benchmark.py").run()
    assert not at.exception
    [chunkers] = [m for m in at.multiselect if m.label == "Chunkers"]
    assert "recursive:theta=300" in chunkers.options and "recursive:theta=300" in chunkers.value


def test_the_fast_embedding_setting_chooses_int8_says_what_it_costs_and_is_saved(app):
    """The sidebar's fast setting is the int8 MiniLM; its help quotes the committed embedder study (RESULTS.md);
    it is saved with the settings and switching it off brings the default back."""
    from core.settings import Settings, load_settings
    from core.store.embeddings import BUNDLED_MINILM_INT8
    from core.workbench import fast_embedding_cost

    [fast] = [t for t in app.toggle if t.label == "Fast embedding (int8)"]
    assert fast.value is False and fast_embedding_cost() and "stays the default" in fast.help
    fast.set_value(True)
    at = click(app, "Save settings")
    assert not at.exception and at.session_state["settings"].embedder == BUNDLED_MINILM_INT8
    assert not [t for t in at.text_input if t.label == "Embedder"]  # the typed embedder gives way to the toggle
    assert load_settings().embedder == BUNDLED_MINILM_INT8
    [fast] = [t for t in at.toggle if t.label == "Fast embedding (int8)"]
    fast.set_value(False)
    at = click(at, "Save settings")
    assert at.session_state["settings"].embedder == Settings().embedder
