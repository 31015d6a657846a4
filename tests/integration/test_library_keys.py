"""Two libraries in one workspace hold the same two texts under other titles (B's are A's swapped), with the same
gold tags. Each library's chunks, collections and benchmark figures are its own: B's prefixes, tags and export name
B's titles, its routed questions route by B's titles, and its CNM accuracy and routed hit@1 are B's, not A's
replayed from the caches or the benchmark memo. The same library asked again is served from them. Real embedded
Chroma, the bundled MiniLM, CHOP's no-LLM `extract` backend."""

from __future__ import annotations

from dataclasses import replace

from core.evaluation.bench import BenchOptions, bench_dataset
from core.infra.workspace import Workspace
from core.ingest.datasets import QADataset
from core.methods.chop.extract import ExtractCnm
from core.outputs.export import records
from core.schema.documents import Document
from core.schema.questions import Question
from core.schema.spans import Span
from core.services import Services
from core.settings import Settings
from core.store.index import StoreSettings, VectorStore
from core.store.retrieval import RetrievalSettings
from core.workbench import Corpus, run_chunkers

CAMERA_TEXT = ("Charge the battery for three hours before first use. Press the shutter halfway to focus, then fully "
               "to take the picture.\n\nClean the lens with the supplied cloth, never with tissue paper.\n\n")
DRILL_TEXT = ("Charge the battery pack for one hour before first use. Turn the collar to set the torque before you "
              "drive a screw.\n\nClean the vents with a dry brush, never with water.\n\n")
CAMERA, DRILL = "Lumora X100 Digital Camera user manual", "Brandco Z9 Cordless Drill user manual"
GOLD = {"cam": {"category": "Digital Camera", "model": "Lumora X100"},
        "drill": {"category": "Cordless Drill", "model": "Brandco Z9"}}
ROUTE, PREFIXED = "naive-500t:size=40:overlap=5:retrieval=route", "naive-500t:size=40:overlap=5:prefix=title"


def library(titles: dict[str, str]) -> QADataset:
    docs = [Document("cam", titles["cam"], CAMERA_TEXT, cnm=GOLD["cam"]),
            Document("drill", titles["drill"], DRILL_TEXT, cnm=GOLD["drill"])]
    start = CAMERA_TEXT.index("Press the shutter")
    questions = [Question("q1", "How do I focus the Lumora X100?",
                          (Span("cam", start, start + len("Press the shutter halfway to focus")),))]
    return QADataset("lib", docs, questions)


A = library({"cam": CAMERA, "drill": DRILL})
B = library({"cam": DRILL, "drill": CAMERA})  # the same texts and gold tags, the titles swapped


def services_in(tmp_path, embedder) -> Services:
    ws = Workspace.open(tmp_path / "ws")
    return Services(Settings(workspace=str(ws.root)), ws, embedder, VectorStore(StoreSettings(path=ws.chroma)),
                    {"llm": ExtractCnm()})


def test_each_library_is_chunked_and_indexed_for_its_own_titles(tmp_path, cached_minilm):
    services = services_in(tmp_path, cached_minilm)
    first = run_chunkers(services, Corpus(A.documents), [PREFIXED, "chop"])
    second = run_chunkers(services, Corpus(B.documents), [PREFIXED, "chop"])
    for spec in (PREFIXED, "chop"):
        assert first[spec].ok and second[spec].ok
        assert not second[spec].run.from_cache and not second[spec].indexed.reused
        assert second[spec].indexed.collection != first[spec].indexed.collection
        cam = [c for c in second[spec].run.chunks if c.doc_id == "cam"]
        assert cam and all("Z9" in c.prefix and "X100" not in c.prefix for c in cam), spec
        exported = [r for r in records({spec: second[spec].run.chunks}, B.documents)
                    if r["metadata"]["doc_id"] == "cam"]
        assert all(r["metadata"]["title"] == DRILL and "Z9" in r["metadata"]["prefix"] for r in exported)
    assert second["chop"].titles == {"cam": DRILL, "drill": CAMERA}
    again = run_chunkers(services, Corpus(A.documents), [PREFIXED, "chop"])  # nothing changed: all from the caches
    assert all(again[s].run.from_cache and again[s].indexed.reused for s in (PREFIXED, "chop"))


def test_each_library_gets_its_own_benchmark_figures_and_an_unchanged_one_its_memo(tmp_path, cached_minilm):
    services = services_in(tmp_path, cached_minilm)
    options = BenchOptions([1], retrieval=RetrievalSettings("dense"))
    a = bench_dataset(A, [ROUTE, "chop"], options, services).to_json()["results"]
    b = bench_dataset(B, [ROUTE, "chop"], options, services).to_json()["results"]
    # A's titles route the X100 question to the camera manual, which holds the answer; B's to the drill manual
    assert a[ROUTE]["hit@1"] == 1.0 and b[ROUTE]["hit@1"] == 0.0
    assert a[ROUTE]["retrieval_applied"] == b[ROUTE]["retrieval_applied"] == {"route": 1}
    # CHOP tags each manual from its title: right against the gold tags under A's titles, wrong under B's
    assert a["chop"]["cnm_category_accuracy"] == 1.0 and b["chop"]["cnm_category_accuracy"] == 0.0
    assert not any(r["scores_cached"] for r in b.values())
    again = bench_dataset(A, [ROUTE, "chop"], options, services).to_json()["results"]
    assert all(r["scores_cached"] for r in again.values())
    assert again[ROUTE]["hit@1"] == 1.0 and again["chop"]["cnm_category_accuracy"] == 1.0
    # other gold tags alone (the same titles, texts and chunks) score afresh
    gold = replace(A, documents=[replace(d, cnm={"category": "Toaster"}) for d in A.documents])
    regraded = bench_dataset(gold, ["chop"], options, services).to_json()["results"]["chop"]
    assert not regraded["scores_cached"] and regraded["cnm_category_accuracy"] == 0.0
