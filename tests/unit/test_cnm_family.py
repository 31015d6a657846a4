"""One correction fixes the family (core.methods.chop.family): a made-up family of near-duplicate manuals, cut by
CHOP with the `extract` backend, and one manual's tag corrected by hand."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.ingest.datasets import joined
from core.methods.chop.cnm import CNM
from core.methods.chop.edits import CnmEdit, EditLog, apply_edits
from core.methods.chop.evidence import BY_HAND
from core.methods.chop.extract import ExtractCnm
from core.methods.chop.family import hand_examples, held_back, manual_of, propose, runs_of, teach
from core.pipeline import chunk_documents
from core.schema.documents import Document

BODY = ("The {name} keeps its settings when the power is off. Press and hold the mode button for three seconds to "
        "pair it. The status light blinks twice when pairing succeeds. Clean the housing with a dry cloth only.\n\n"
        "Specifications of the {name}: weight {w} g, range {r} m, battery life {b} hours, charging time 90 minutes. "
        "Firmware updates arrive through the companion app; keep the {name} close to the phone while it updates.\n\n")
FAMILY = {  # made-up names: the kinds of title the issue describes, none from a real set
    "z6mini": ("Acme Zephyr 6 Mini User Guide", "Zephyr 6 Mini"),
    "z6c": ("Acme Zephyr 6C User Guide", "Zephyr 6C"),
    "z5nano": ("Acme Zephyr V5 nano User Guide", "Zephyr V5 nano"),
    "z7": ("Acme Zephyr 7 User Guide", "Zephyr 7"),
    "c2": ("Acme C2 Battery Charger User Guide", "C2"),
}


def family() -> list[Document]:
    return [Document(doc_id, title, f"# {title}\n\n" + BODY.format(name=name, w=30 + i, r=100 * i, b=2 + i) * 3)
            for i, (doc_id, (title, name)) in enumerate(FAMILY.items())]


def chop_chunks(documents: list[Document]):
    chunker = make_chunker("chop:size=60:overlap=0", ChunkerContext(llm=ExtractCnm()))
    return chunk_documents(documents, chunker).chunks


EXAMPLE = {"z6mini": {"category": "flight controller", "model": "Zephyr 6 Mini"}}


@pytest.mark.parametrize("stream", [False, True], ids=["separate", "joined"])
def test_one_correction_carries_to_the_family_and_nowhere_else(stream):
    docs = family()
    documents = joined_documents(docs) if stream else docs
    chunks = chop_chunks(documents)
    taught, changes = teach(chunks, documents, EXAMPLE)
    by_id = {d.doc_id: d for d in documents}
    tags = {}
    for c in taught:
        tags.setdefault(manual_of(c, by_id), set()).add((CNM.of(c).category, CNM.of(c).model))
    # the family word stays, variant words stay attached, the brand and the kind of document go
    assert tags["z6mini"] == {("flight controller", "Zephyr 6 Mini")}
    assert tags["z6c"] == {("flight controller", "Zephyr 6C")}
    assert tags["z5nano"] == {("flight controller", "Zephyr V5 nano")}
    assert tags["z7"] == {("flight controller", "Zephyr 7")}
    # a title that states a product type of its own keeps it, and the type never joins the model
    assert tags["c2"] == {("Battery Charger", "C2")}
    if stream:  # the stream runs on past z6c's heading: the title template names its model
        assert {c.why for c in changes if c.doc_id == "z6c"} == {"family: z6mini's correction",
                                                                 "family: the title template of z6mini's correction"}
    else:  # the texts write the family's name with each model, so the extractor kept it: only the category changes
        assert {c.why for c in changes if c.doc_id == "z6c"} == {"family: z6mini's correction"}
        assert {CNM.of(c).model for c in chunks if manual_of(c, by_id) == "z6c"} == {"Zephyr 6C"}
    # every changed run says where its parts came from
    first = next(c for c in taught if manual_of(c, by_id) == "z7")
    assert first.meta["cnm_sources"]["category"] == "family: z6mini's correction"


def joined_documents(docs: list[Document]) -> list[Document]:
    from core.ingest.datasets import QADataset

    return joined(QADataset("family", docs, [])).documents


def test_a_run_crossing_into_another_manual_is_cut_where_that_manual_begins():
    """In a joined stream whose decisions missed a join, the correction still reaches the second manual: its part
    of the run becomes a run of its own (a FALSE decision at its first chunk)."""
    documents = joined_documents(family()[:2])
    chunks = chop_chunks(documents)
    for c in chunks[1:]:  # the backend saw one manual: every decision says the text goes on
        c.meta["continuity"] = True
    runs = runs_of(chunks, documents)
    assert [(r.doc_id, r.split) for r in runs] == [("z6mini", False), ("z6c", True)]
    edits, _ = propose(chunks, documents, EXAMPLE)
    assert [e.continuity for e in edits] == [None, False]
    taught, _ = apply_edits(chunks, edits, backend=None)
    assert CNM.of(taught[-1]).model == "Zephyr 6C" and CNM.of(taught[0]).model == "Zephyr 6 Mini"


def test_a_model_outside_the_title_teaches_nothing_and_an_unknown_manual_is_refused():
    documents = family()
    chunks = chop_chunks(documents)
    _, changes = propose(chunks, documents, {"z6mini": {"model": "Z6M-2024"}})
    assert {c.doc_id for c in changes} == {"z6mini"}
    with pytest.raises(KeyError, match="no manual nope"):
        propose(chunks, documents, {"nope": {"category": "x"}})


def test_hand_corrections_become_examples_and_survive_the_edit_log(tmp_path):
    documents = family()
    chunks = chop_chunks(documents)
    start = next(c for c in chunks if c.doc_id == "z6mini")
    typed = CnmEdit(start.chunk_id, cnm={"category": "flight controller", "model": "Zephyr 6 Mini", "nouns": []})
    edited, _ = apply_edits(chunks, [typed], backend=None)
    assert start.chunk_id and edited[0].meta["cnm_sources"]["category"] == BY_HAND
    assert hand_examples(edited, documents) == EXAMPLE
    edits, _ = propose(edited, documents, hand_examples(edited, documents))
    log = EditLog(tmp_path)
    log.append("0" * 32, "chop", [typed, *edits])
    replayed = log.batches("0" * 32)[0]
    assert replayed[0].sources is None and replayed[1].sources == edits[0].sources
    again, _ = apply_edits(chunks, replayed, backend=None)
    assert [CNM.of(c) for c in again] == [CNM.of(c) for c in apply_edits(edited, edits, backend=None)[0]]


def test_corrections_whose_titles_are_as_near_are_weighed_by_the_manuals_own_words_in_any_order():
    """Two corrections, two categories, titles as near to a third manual as each other: the category whose words
    that manual's text uses wins, whatever the order the corrections came in; with no such word, nothing changes."""
    documents = family()
    documents[1].text += "\n\nThis flight controller mounts on any frame. " * 3  # z6c speaks of controllers
    chunks = chop_chunks(documents)
    both = {**EXAMPLE, "z7": {"category": "racing drone", "model": "Zephyr 7"}}
    for order in (both, dict(reversed(list(both.items())))):
        taught, _ = teach(chunks, documents, order)
        by_id = {d.doc_id: d for d in documents}
        category = {manual_of(c, by_id): CNM.of(c).category for c in taught}
        assert category["z6c"] == "flight controller"  # its own text names controllers
        assert category["z5nano"] is None  # names neither: left unknown, not guessed


def test_a_category_that_sets_its_manual_apart_goes_only_to_the_manuals_that_name_it():
    """One tablet-like manual among phones: its corrected type goes to the other manual that speaks of it as often,
    not to the rest, which keep their tag and are listed with why; a type every manual names goes everywhere."""
    documents = family()
    for doc in documents[2:4]:
        doc.text += "\n\nHold the tablet in landscape; the tablet stand folds flat. " * 4
    for doc in documents:
        doc.text += "\n\nThe remote pairs with one remote base. " * 2
    chunks = chop_chunks(documents)
    by_id = {d.doc_id: d for d in documents}
    example = {"z7": {"category": "tablet"}}
    taught, _ = teach(chunks, documents, example)
    category = {manual_of(c, by_id): CNM.of(c).category for c in taught}
    assert category["z5nano"] == "tablet"
    assert "tablet" not in {category["z6mini"], category["z6c"]} and category["c2"] == "Battery Charger"
    held = held_back(documents, example)
    assert {h.doc_id for h in held} == {"z6mini", "z6c", "c2"}
    assert all(h.why.startswith('not carried: "tablet" sets z7 apart') for h in held)
    evenly = {"z7": {"category": "remote"}}
    taught, _ = teach(chunks, documents, evenly)
    assert {CNM.of(c).category for c in taught if manual_of(c, by_id) != "c2"} == {"remote"}
    assert held_back(documents, evenly) == []


def test_a_title_word_the_correction_puts_in_the_model_is_no_longer_a_category():
    """The extractor reads "Pad" of "Acme Pad S6" as a product type (the manuals write "pad" in lower case); a
    correction whose model is "Pad 8" shows it is part of the name: the S6's category is taken off, then the
    family's type is carried to it."""
    names = {"s10": ("Acme S10 User Guide", "S10"), "a50": ("Acme A50 User Guide", "A50"),
             "n9": ("Acme Note 9 User Guide", "Note 9"), "pad8": ("Acme Pad 8 User Guide", "Pad 8"),
             "pads6": ("Acme Pad S6 User Guide", "Pad S6")}
    pads = "Tap the touch pad twice; the pad lights up, the pad cover opens and the pad dims.\n\n"
    documents = [Document(d, title, f"# {title}\n\n" + (BODY.format(name=name, w=30, r=100, b=2) + pads) * 3)
                 for d, (title, name) in names.items()]
    chunks = chop_chunks(documents)
    by_id = {d.doc_id: d for d in documents}
    assert {CNM.of(c).category for c in chunks if manual_of(c, by_id) == "pads6"} == {"Pad"}
    taught, changes = teach(chunks, documents, {"pad8": {"category": "tablet", "model": "Pad 8"}})
    tags = {(manual_of(c, by_id), CNM.of(c).category, CNM.of(c).model) for c in taught}
    assert ("pads6", "tablet", "Pad S6") in tags and ("n9", "tablet", "Note 9") in tags
    assert not any(m == "pads6" and cat == "Pad" for m, cat, _ in tags)
