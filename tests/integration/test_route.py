"""Title routing (`retrieval=route`) on real Chroma, real BM25 and the real MiniLM: the named document's chunks only,
the most specific title, unfiltered (and saying why) when no title is named or there is one document (a joined
stream), in the bench, the command line and what the Query page shows."""

from __future__ import annotations

import json

import pytest

from components.html import query_tags_html
from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.infra.errors import ConfigError
from core.infra.workspace import Workspace
from core.ingest.documents import join_documents
from core.methods.chop.rules import RuleCnm
from core.pipeline import chunk_documents, index_run
from core.schema.documents import Document
from core.services import Services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.store.lexical import LexicalStore
from core.store.retrieval import RetrievalSettings, Retriever
from core.store.routing import NO_TITLE_NAMED, ONE_DOCUMENT, TitleRoute, document_titles, title_words
from core.workbench import ask_all, make_corpus, run_chunkers
from tests.support.cli import run_cli
from tests.support.corpora import write_folder

PHONE = ("The phone has a 6.1 inch screen and a fingerprint sensor. Charge it with the supplied USB-C cable. "
         "Open Settings to change the wallpaper, the ringtone and the screen timeout. ")


def phone_text(model: str, screenshot: str) -> str:
    return (f"Galaxy {model} user manual.\n\n" + PHONE * 5 + f"\n\nTo take a screenshot on the {model}, {screenshot}."
            f"\n\nThe battery of the {model} lasts about a day.")


DOCS = [
    Document("s10", "Samsung Galaxy S10 user manual", phone_text("S10", "press the side key and volume down")),
    Document("s10lite", "Samsung Galaxy S10 Lite user manual",
             phone_text("S10 Lite", "swipe the edge of your palm across the screen")),
    Document("cam", "Lumora X100 Digital Camera — User Manual",
             "Charge the X100 camera battery for three hours before first use. Press the shutter halfway to "
             "focus, then fully to take the picture. Clean the lens with the supplied cloth."),
]
ROUTE, PLAIN = "naive-500t:size=40:overlap=5:retrieval=route", "naive-500t:size=40:overlap=5"


def _indexed(tmp_path, embedder, docs, spec=PLAIN):
    store = VectorStore(StoreSettings(path=tmp_path / "db"))
    chunker = make_chunker(spec, ChunkerContext(llm=RuleCnm(), embedder=embedder))
    run = chunk_documents(docs, chunker)
    indexed = index_run(run, docs, embedder, store, lexical=LexicalStore(tmp_path / "lexical"))
    return store, run, indexed


def _retrievers(tmp_path, embedder, docs, mode, spec=ROUTE):
    """The routed retriever over a run, and a plain one over the same run (routing changes no chunk)."""
    store, run, indexed = _indexed(tmp_path, embedder, docs, spec)
    settings = RetrievalSettings(mode)
    policy = make_chunker(spec).retrieval_policy(document_titles(docs))
    routed = Retriever(store, indexed.collection, run.chunks, embedder, policy, settings, indexed.lexical)
    plain = Retriever(store, indexed.collection, run.chunks, embedder, None, settings, indexed.lexical)
    return routed, plain


def _ids(hits):
    return [(h.chunk.chunk_id, round(h.score, 5)) for h in hits]


def test_route_is_a_retrieval_parameter_of_every_chunker_and_changes_no_cache_key():
    plain, routed = make_chunker("naive-500t"), make_chunker("naive-500t:retrieval=route")
    assert plain.spec == "naive-500t:overlap=100:size=500"  # the default is left out: specs stay as they were
    assert routed.identity == plain.identity and "retrieval=route" in routed.spec
    assert plain.retrieval_policy({"a": "A", "b": "B"}) is None
    assert isinstance(routed.retrieval_policy({"a": "A", "b": "B"}), TitleRoute)
    for spec in ("recursive", "paragraph", "sentence", "cosine", "semantic", "mg", "lg", "lgmgc", "lumber"):
        chunker = make_chunker(f"{spec}:retrieval=route")
        assert chunker.identity == make_chunker(spec).identity and "retrieval" not in make_chunker(spec).spec
    chop = make_chunker("chop:retrieval=route")
    assert isinstance(chop.retrieval_policy({}), TitleRoute) and chop.identity == make_chunker("chop").identity
    with pytest.raises(ConfigError, match="retrieval must be one of off, route"):
        make_chunker("naive-500t:retrieval=filter")



def _split(answer):
    return answer.hits, answer.tags


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_route_keeps_the_named_documents_chunks_in_every_mode(tmp_path, cached_minilm, mode):
    routed, plain = _retrievers(tmp_path, cached_minilm, DOCS, mode)
    question = "Samsung Galaxy S10: how do I take a screenshot?"
    assert {h.chunk.doc_id for h in plain.search(question, 5)} > {"s10"}  # near-duplicates: unrouted, they mix
    hits, tags = _split(routed.ask(question, 5))
    assert hits and {h.chunk.doc_id for h in hits} == {"s10"} and all(h.tag_match == 1.0 for h in hits)
    assert (tags.applied, tags.label, tags.values) == ("route", "title routing", ["s10"])
    assert tags.tags["titles"] == ["Samsung Galaxy S10 user manual"] and tags.tags["named"] == ["Samsung Galaxy S10"]
    camera = routed.search("Lumora X100: how do I focus?", 3)
    assert {h.chunk.doc_id for h in camera} == {"cam"}


def test_the_longest_title_wins(tmp_path, cached_minilm):
    routed, _ = _retrievers(tmp_path, cached_minilm, DOCS, "hybrid")
    hits, tags = _split(routed.ask("Galaxy S10 Lite: how do I take a screenshot?", 5))
    assert {h.chunk.doc_id for h in hits} == {"s10lite"} and tags.values == ["s10lite"]
    route = TitleRoute({"s10": "Galaxy S10", "s10e": "Galaxy S10e", "lite": "Galaxy S10 Lite", "fit": "Galaxy Fit"})

    def docs(question):
        return route.tag_queries([question])[0]["doc_ids"]

    assert docs("Galaxy S10e: battery life?") == ["s10e"]  # "S10e" is not an "S10"
    assert docs("battery life of the S10 Lite") == ["lite"]  # the longer run names the more specific title
    assert docs("Galaxy S10: battery life?") == docs("S10 battery") == ["s10"]
    assert sorted(docs("the S10 Lite or the S10e?")) == ["lite", "s10e"]  # separate mentions are all kept
    assert docs("How do I fit the strap?") == [] and docs("the Galaxy Fit strap") == ["fit"]  # product names are
    assert docs("wait 10 seconds") == []  # capitalised or hold a digit; a bare number names nothing
    assert title_words("Lumora X100 Digital Camera — User Manual") == ["Lumora", "X100", "Digital", "Camera"]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_question_naming_no_title_is_searched_unfiltered(tmp_path, cached_minilm, mode):
    routed, plain = _retrievers(tmp_path, cached_minilm, DOCS, mode)
    question = "how do I take a screenshot?"
    hits, tags = _split(routed.ask(question, 5))
    assert _ids(hits) == _ids(plain.search(question, 5))
    assert tags.applied == NO_TITLE_NAMED == "none (no title named)" and tags.values == []


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_joined_stream_has_no_titles_to_route_by(tmp_path, cached_minilm, mode):
    stream = join_documents(DOCS)
    routed, plain = _retrievers(tmp_path, cached_minilm, [stream], mode)
    question = "Samsung Galaxy S10: how do I take a screenshot?"
    hits, tags = _split(routed.ask(question, 5))
    assert _ids(hits) == _ids(plain.search(question, 5))  # unfiltered: the stream's hits as they are
    assert tags.applied == ONE_DOCUMENT == "none (one document: no titles to route by)"
    assert tags.tags["titles"] == [] and all(h.tag_match is None for h in hits)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_route_filters_multi_granular_children(tmp_path, cached_minilm, mode):
    routed, _ = _retrievers(tmp_path, cached_minilm, DOCS, mode, "mg:theta=40:retrieval=route")
    hits, tags = _split(routed.ask("Samsung Galaxy S10: how do I take a screenshot?", 3))
    assert hits and all(h.chunk.doc_id == "s10" and h.chunk.parent_id is None and h.children for h in hits)
    assert tags.applied == "route"


def test_the_query_page_shows_what_routing_applied(tmp_path, cached_minilm):
    ws = Workspace.open(tmp_path / "ws")
    services = Services(Settings(workspace=str(ws.root)), ws, cached_minilm,
                        VectorStore(StoreSettings(path=ws.chroma)), {"llm": RuleCnm()},
                        lexical=LexicalStore(ws.lexical))
    question = "Samsung Galaxy S10: how do I take a screenshot?"
    for join, applied in ((False, "route"), (True, ONE_DOCUMENT)):
        corpus = make_corpus(DOCS, None, join)
        results = run_chunkers(services, corpus, [ROUTE, "chop:size=40:overlap=5:retrieval=filter"])
        answers = ask_all(services, results, question, 3)
        tags = answers[ROUTE].query_tags
        assert tags is not None and tags.applied == applied
        shown = query_tags_html(tags)
        assert f"title routing ({applied}):" in shown
        assert ("title: Samsung Galaxy S10 user manual" in shown) is (not join)
        assert "question CNM (" in query_tags_html(answers["chop:size=40:overlap=5:retrieval=filter"].query_tags)


@pytest.fixture()
def manuals(tmp_path):
    def ref(doc, phrase):
        start = doc.text.index(phrase)
        return {"doc_id": doc.doc_id, "start": start, "end": start + len(phrase)}

    questions = [
        {"qid": "q1", "question": "How do I take a screenshot?", "product": "Samsung Galaxy S10",
         "references": [ref(DOCS[0], "press the side key and volume down")]},
        {"qid": "q2", "question": "How do I take a screenshot?", "product": "Samsung Galaxy S10 Lite",
         "references": [ref(DOCS[1], "swipe the edge of your palm across the screen")]},
        {"qid": "q3", "question": "How long do I charge the battery?", "product": "Lumora X100",
         "references": [ref(DOCS[2], "Charge the X100 camera battery for three hours before first use.")]},
    ]
    docs = [{"doc_id": d.doc_id, "title": d.title, "text": d.text} for d in DOCS]
    return write_folder(tmp_path / "manuals", docs, questions)


@pytest.mark.slow
def test_bench_runs_route_and_says_when_there_is_nothing_to_route_by(manuals, tmp_path):
    specs = f"{PLAIN},{ROUTE}"
    for join in (False, True):
        out = tmp_path / f"report-{join}.json"
        proc = run_cli("bench", "--data", str(manuals), "--chunkers", specs, "--k", "1,3", "--qualify-queries",
                       *(["--join"] if join else []), "--out", str(out), workspace=tmp_path / "ws")
        assert proc.returncode == 0, proc.stderr
        results = json.loads(out.read_text())["results"]
        assert results[PLAIN]["retrieval_applied"] == {}
        routed = results[ROUTE]
        if not join:
            assert routed["retrieval_applied"] == {"route": 3} and routed["wrong_doc@3"] == 0.0
            assert f"{ROUTE}: route 3" in proc.stdout
        else:
            assert routed["retrieval_applied"] == {ONE_DOCUMENT: 3}
            assert f"{ROUTE}: none (one document: no titles to route by) 3" in proc.stdout
            assert all(routed[m] == results[PLAIN][m] for m in ("hit@1", "hit@3", "mrr@3"))  # unfiltered


def test_the_query_page_draws_routing_on_the_sample_set(app_workspace):
    from streamlit.testing.v1 import AppTest

    from tests.support.appflow import click, load_sample
    from tests.support.data import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["specs"] = ["naive-500t", "naive-500t:retrieval=route"]
    load_sample(at.run())
    at.switch_page("pages/chunks.py").run()
    at = click(at, "Run chunkers")
    at.switch_page("pages/query.py").run()
    at.selectbox[0].select_index(1).run()  # the sample set's first question
    at.checkbox[0].check().run()  # with its product in front: "Nordwind 225B air conditioner: ..."
    at = click(at, "Ask every chunker")
    assert not at.exception and not at.error
    htmls = " ".join(h.proto.body for h in at.get("html"))
    assert "title routing (route):" in htmls and "title: Nordwind 225B Split Air Conditioner" in htmls
    assert "title match 1" in htmls and "question CNM" not in htmls
