"""CNM tags scored against gold tags: the metric on hand cases, the gold field of a qa-spans folder, the rule
backend on the sample set, and the fields every bench report carries."""

from __future__ import annotations

import json

import pytest

from core.infra.errors import DatasetError
from core.ingest.datasets import QADataset, first_documents, joined, load_dataset
from core.methods.chop.accuracy import categories_match, cnm_accuracy
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.workbench import sample_folder


def _chunk(doc_id: str, start: int, end: int, cnm: dict | None, index: int = 0) -> Chunk:
    return Chunk(doc_id, start, end, "x" * (end - start), 1, index=index, meta={"cnm": cnm})


def test_accuracy_on_hand_cases():
    a = Document("a", "A", "x" * 100, cnm={"category": "air conditioner", "model": "225B"})
    b = Document("b", "B", "x" * 100, cnm={"category": "fan", "model": "F30"})
    chunks = [
        _chunk("a", 0, 10, {"category": "Split Air Conditioner", "model": "225b", "nouns": []}, 0),  # both right
        _chunk("a", 10, 20, {"category": "air conditioner", "model": "226R", "nouns": []}, 1),  # wrong model
        _chunk("a", 20, 30, {"category": None, "model": None, "nouns": []}, 2),  # empty
        _chunk("b", 0, 10, {"category": "camera", "model": "Nordwind F30", "nouns": ["blade"]}, 0),  # model only
    ]
    acc = cnm_accuracy(chunks, [a, b])
    assert acc is not None and acc.chunks == 4
    assert acc.category_accuracy == pytest.approx(2 / 4)
    assert acc.model_accuracy == pytest.approx(2 / 4)  # "225b" and "Nordwind F30" match; "226R" and None do not
    assert acc.empty_rate == pytest.approx(1 / 4)
    # the category: right on two, wrong on "camera", unknown on the empty one; they add up to 1
    assert (acc.category.right, acc.category.wrong, acc.category.unknown) == pytest.approx((2 / 4, 1 / 4, 1 / 4))
    assert (acc.model.right, acc.model.wrong, acc.model.unknown) == pytest.approx((2 / 4, 1 / 4, 1 / 4))


def test_untagged_chunks_and_documents_without_gold_are_not_judged():
    plain = Document("p", "P", "x" * 50)
    gold = Document("g", "G", "x" * 50, cnm={"model": "X100"})
    untagged = Chunk("g", 0, 10, "x" * 10, 1)  # no "cnm" in meta: not a CHOP chunk
    assert cnm_accuracy([untagged, _chunk("p", 0, 10, {"model": "X100"})], [plain, gold]) is None
    acc = cnm_accuracy([_chunk("g", 0, 10, {"model": "X100"})], [plain, gold])
    assert acc.category_accuracy is None and acc.model_accuracy == 1.0  # no gold category: no category score


def test_a_stream_chunk_is_judged_by_the_document_under_its_midpoint():
    docs = [Document("a", "A", "a" * 100, cnm={"model": "225B"}), Document("b", "B", "b" * 100, cnm={"model": "F30"})]
    stream = joined(QADataset("s", docs, [])).documents[0]
    join = stream.joins[0]
    chunks = [_chunk(stream.doc_id, join - 30, join + 10, {"model": "225B"}, 0),  # midpoint in a: right
              _chunk(stream.doc_id, join - 10, join + 30, {"model": "225B"}, 1)]  # midpoint in b: wrong
    acc = cnm_accuracy(chunks, [stream])
    assert acc.model_accuracy == pytest.approx(0.5)


@pytest.mark.parametrize(("gold", "tag", "same"), [
    ("air conditioner", "Split Air-Conditioner", True), ("air conditioner", "conditioner", False),
    ("fan", "Fan", True), ("fan", "fans", False), ("camera", "", False), ("camera", None, False)])
def test_categories_match(gold, tag, same):
    assert categories_match(gold, tag) is same


def test_a_qa_folder_may_carry_gold_tags_and_a_bad_one_names_its_line(tmp_path):
    rows = [{"doc_id": "a", "text": "Alpha manual text.", "cnm": {"category": "fan", "model": " F30 "}},
            {"doc_id": "b", "text": "Beta manual text."}]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text(json.dumps(
        {"question": "q?", "references": [{"doc_id": "a", "start": 0, "end": 5}]}), encoding="utf-8")
    ds = load_dataset(tmp_path)
    assert [d.cnm for d in ds.documents] == [{"category": "fan", "model": "F30"}, None]
    assert [s.cnm for s in joined(ds).documents[0].segments] == [{"category": "fan", "model": "F30"}, None]
    rows[1]["cnm"] = {"model": 30}
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"corpus.jsonl:2: 'cnm' must be an object"):
        load_dataset(tmp_path)


def test_the_sample_set_ships_every_manuals_gold_tags():
    ds = load_dataset(sample_folder())
    assert all(d.cnm and d.cnm["model"] in d.title and d.cnm["category"] for d in ds.documents)


def test_the_rule_backend_tags_the_sample_manuals_right(cached_minilm):
    from core.chunkers.base import ChunkerContext
    from core.chunkers.registry import make_chunker
    from core.methods.chop.rules import RuleCnm
    from core.pipeline import chunk_documents

    ds = load_dataset(sample_folder())
    chop = make_chunker("chop", ChunkerContext(llm=RuleCnm(embedder=cached_minilm)))
    acc = cnm_accuracy(chunk_documents(ds.documents, chop).chunks, ds.documents)
    assert acc.chunks > 100 and acc.model_accuracy >= 0.9 and acc.category_accuracy >= 0.9 and acc.empty_rate == 0


def test_every_bench_result_carries_the_cnm_fields(cached_minilm, workspace):
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.methods.chop.rules import RuleCnm
    from core.services import Services
    from core.settings import Settings
    from core.store.index import StoreSettings, VectorStore

    ds = first_documents(load_dataset(sample_folder()), 2)
    services = Services(Settings(workspace=str(workspace.root)), workspace, cached_minilm,
                        VectorStore(StoreSettings(path=workspace.chroma)),
                        {"llm": RuleCnm(embedder=cached_minilm)})
    report = bench_dataset(ds, ["naive-500t", "chop"], BenchOptions([1]), services).to_json()["results"]
    assert report["naive-500t"]["cnm_model_accuracy"] is None and report["naive-500t"]["cnm_judged_chunks"] == 0
    assert report["chop"]["cnm_model_accuracy"] == 1.0 and report["chop"]["cnm_empty_rate"] == 0.0
    assert report["chop"]["cnm_judged_chunks"] == report["chop"]["n_chunks"]


def test_gold_tags_from_a_file_and_the_bench_flag(tmp_path, capsys):
    from core.__main__ import main
    from core.ingest.datasets import attach_gold

    ds = load_dataset(sample_folder())
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"documents": {"fan-F30": {"category": "electric fan", "model": "F-30"}}}))
    tagged = attach_gold(ds, gold)
    by_id = {d.doc_id: d.cnm for d in tagged.documents}
    assert by_id["fan-F30"] == {"category": "electric fan", "model": "F-30"}  # the file wins
    assert by_id["camera-X100"] == {"category": "camera", "model": "X100"}  # the corpus's own gold stays
    gold.write_text(json.dumps({"documents": {"no-such-manual": {"model": "Z"}}}))
    with pytest.raises(DatasetError, match="no document 'no-such-manual'"):
        attach_gold(ds, gold)
    gold.write_text("[1, 2]")
    assert main(["bench", "--data", str(sample_folder()), "--chunkers", "chop", "--gold-cnm", str(gold)]) == 2
    assert "not a gold-tags file" in capsys.readouterr().err


def test_the_emanual_gold_file_names_a_model_for_every_manual_title():
    from tests.support.data import ROOT

    gold = json.loads((ROOT / "docs" / "gold" / "emanual_galaxy.json").read_text())
    assert len(gold["documents"]) == 19
    assert all(g["model"] and g["category"] in ("smartphone", "tablet", "smartwatch")
               for g in gold["documents"].values())
    assert gold["documents"]["Galaxy_S10_Lite"]["model"] == "S10 Lite"


def test_copy_rate_counts_example_models_the_text_never_names():
    from core.methods.chop.accuracy import copy_rate

    fan = Document("fan", "Fan", "The T12 tower fan. " * 10)
    aircon = Document("ac", "AC", "The 225B air conditioner. " * 10)
    chunks = [_chunk("fan", 0, 10, {"model": "225B"}, 0),  # copied: the fan manual never says 225B
              _chunk("fan", 10, 20, {"model": "T12"}, 1),
              _chunk("ac", 0, 10, {"model": "225b"}, 0),  # read: the manual names it
              _chunk("ac", 10, 20, {"model": None}, 1)]
    assert copy_rate(chunks, [fan, aircon]) == pytest.approx(1 / 4)
    assert copy_rate([Chunk("fan", 0, 5, "The T", 1)], [fan]) is None  # no tags: nothing to rate


def test_an_unknown_part_is_drawn_as_unknown_with_its_reason():
    from components.html import cnm_badges_html
    from core.methods.chop.cnm import CNM
    from core.methods.chop.extract import UNKNOWN_CATEGORY

    html = cnm_badges_html(CNM(model="K5"), "extracted", {"model": "title", "category": UNKNOWN_CATEGORY})
    assert "model: K5" in html and "cat: unknown" in html and "no title, heading or opening line" in html
    assert "cat: unknown" not in cnm_badges_html(CNM(model="K5"), "extracted", {"model": "title"})
