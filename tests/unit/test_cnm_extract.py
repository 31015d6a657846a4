"""The `extract` CNM backend (core.methods.chop.extract): tag accuracy on the sample set, the eurorack modules and
the Galaxy manuals, separate and joined; the keyphrase method against hand-labelled windows; no product of our sets
in its vocabulary; sources and cuts in the chunk meta."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.ingest.datasets import attach_gold, joined, load_dataset
from core.methods.chop import document_view, evidence, extract, family, reading, speech, titles
from core.methods.chop.accuracy import cnm_accuracy
from core.methods.chop.extract import UNKNOWN_CATEGORY, ExtractCnm
from core.methods.chop.reading import DOCUMENT_WORDS, SECTION_WORDS, Name, described_type, models_in
from core.methods.chop.rules import GENERIC_SERIES_WORDS, VARIANT_WORDS
from core.pipeline import chunk_documents
from core.text import stopwords
from core.workbench import sample_folder
from tests.support.data import ROOT, shared_dataset

FIXTURE = ROOT / "tests" / "fixtures" / "cnm_nouns.json"


def _accuracy(dataset, join: bool):
    docs = joined(dataset).documents if join else dataset.documents
    run = chunk_documents(docs, make_chunker("chop", ChunkerContext(llm=ExtractCnm())))
    return cnm_accuracy(run.chunks, docs), run


@pytest.mark.parametrize("join", [False, True])
def test_the_sample_set_is_tagged_right_separate_and_joined(join):
    acc, run = _accuracy(load_dataset(sample_folder()), join)
    assert acc.model_accuracy >= 0.9 and acc.category_accuracy >= 0.9 and acc.empty_rate == 0
    if join:  # each manual's tag is read from its own title, after the cut
        fresh = [c for c in run.chunks if c.meta["cnm_source"] == "extracted"]
        assert len(fresh) == 7 and all(c.meta["cnm_sources"]["model"] == "heading" for c in fresh)
        assert all(c.meta["continuity_reason"].startswith("new title") for c in fresh[1:])


@pytest.mark.parametrize("join", [False, True])
def test_eurorack_models_named_by_words(join):
    acc, _ = _accuracy(load_dataset(shared_dataset("eurorack_modules")), join)
    assert acc.model_accuracy >= 0.8


def _galaxy():
    return attach_gold(load_dataset(shared_dataset("emanual_galaxy")), ROOT / "docs" / "gold" / "emanual_galaxy.json")


def test_galaxy_manuals_separate():
    acc, _ = _accuracy(_galaxy(), join=False)
    assert acc.model_accuracy >= 0.9


def test_galaxy_manuals_joined_get_no_wrong_model_and_say_what_the_first_page_read():
    """7 of the 19 Galaxy manuals (A50, Note 9, S7 Active, S8, Tab A 8.0, Tab S6, Z Flip; 37% of the text) never name
    their own model, so in the joined stream a run's model can come only from its first page or a token's
    frequency: right on 341 chunks and wrong on 754 (extract:v4). That evidence is below the threshold
    (`core.methods.chop.evidence`), so every such model is unknown, never wrong, and its reason says what it read;
    the rule backend's lexicon gives none right either."""
    from core.methods.chop.evidence import withheld_guess
    from core.methods.chop.rules import RuleCnm

    galaxy = _galaxy()
    acc, run = _accuracy(galaxy, join=True)
    docs = joined(galaxy).documents
    rule = cnm_accuracy(chunk_documents(docs, make_chunker("chop", ChunkerContext(llm=RuleCnm()))).chunks, docs)
    assert acc.model.wrong == 0 and acc.model.right >= rule.model.right
    reasons = [c.meta["cnm_sources"].get("model") for c in run.chunks if not (c.meta["cnm"] or {}).get("model")]
    said = [g for r in reasons if (g := withheld_guess(r))]
    assert len(said) >= 0.9 * len(reasons) and {source for source, _ in said} <= {"first page", "frequency"}


def test_a_share_of_the_galaxy_text_never_names_its_model():
    """Why the joined Galaxy target is out of reach: the ceiling of any tagger that reads only the stream."""
    gold = json.loads((ROOT / "docs" / "gold" / "emanual_galaxy.json").read_text())["documents"]
    docs = load_dataset(shared_dataset("emanual_galaxy")).documents
    silent = [d for d in docs if not re.search(re.escape(gold[d.doc_id]["model"]).replace(r"\ ", r"\s?"), d.text)]
    share = sum(len(d.text) for d in silent) / sum(len(d.text) for d in docs)
    assert len(silent) == 7 and share > 0.3


# ---- real PDF manuals of kinds none of our sets holds ------------------------------------------------------

DEBIAN = ROOT / "tests" / "fixtures" / "debian"


@pytest.mark.parametrize("name", ["libtasn1.pdf", "avrdude.pdf"])
def test_a_debian_pdf_uploaded_alone_is_tagged_with_its_own_type_and_name(name):
    """Each PDF as a new user uploads it, alone: every chunk carries the product type its first page states and
    the name it opens with, and the manual's chapters ("1 Introduction", "Concept Index") never cut it."""
    from core.ingest.documents import load_file
    from core.methods.chop.accuracy import categories_match
    from core.methods.chop.rules import models_match

    gold = json.loads((DEBIAN / "gold.json").read_text())["documents"][name]
    doc = load_file(DEBIAN / name)
    run = chunk_documents([doc], make_chunker("chop", ChunkerContext(llm=ExtractCnm())))
    tags = [c.meta["cnm"] for c in run.chunks]
    assert len(tags) > 20 and all(t["category"] and t["model"] for t in tags)
    assert all(categories_match(gold["category"], t["category"]) for t in tags)
    assert all(models_match(gold["model"], t["model"]) for t in tags)
    assert run.traces[doc.doc_id]["decisions"].count(False) == 0
    first = run.chunks[0].meta["cnm_sources"]
    assert (first["model"], first["category"]) == ("title", "description")


# ---- no product of our sets in what the extractor knows ------------------------------------------------------


def _our_products() -> list[str]:
    names = []
    for d in load_dataset(sample_folder()).documents:
        names += [d.cnm["model"], d.cnm["category"], d.title.split()[0]]  # model, category, brand
    gold = json.loads((ROOT / "docs" / "gold" / "emanual_galaxy.json").read_text())["documents"]
    names += [g["model"] for g in gold.values()] + ["Galaxy", "Samsung", "smartphone", "smartwatch"]
    return sorted(set(names))


def test_no_word_the_extractor_knows_names_a_product_of_our_sets():
    vocabulary = set(stopwords()) | set(DOCUMENT_WORDS) | set(SECTION_WORDS) | set(VARIANT_WORDS)
    vocabulary |= {w.lower() for w in GENERIC_SERIES_WORDS}  # the words after which it reads a short code
    # the backend, what it reads in a text and in a library's titles, its view of a document, what it learns from a
    # correction, how far it trusts each part and how it asks the part-of-speech tagger
    source = "".join(Path(m.__file__).read_text(encoding="utf-8")
                     for m in (extract, reading, titles, document_view, family, evidence, speech))
    vocabulary |= set(family.DOCUMENT_TAIL)
    assert "RULE_SERIES_WORDS" not in source  # the rule backend's product-family words stay the rule backend's
    found = []
    for name in _our_products():
        if name.lower() in vocabulary or re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", source, re.IGNORECASE):
            found.append(name)
    assert "fan" in _our_products() and "S10 Lite" in _our_products()
    assert found == []


# ---- nouns: the keyphrase method against hand-labelled windows ----------------------------------------------

SETS = {"sample": lambda: sample_folder(), "eurorack_modules": lambda: shared_dataset("eurorack_modules"),
        "emanual_galaxy": lambda: shared_dataset("emanual_galaxy")}


def _words(phrase: str) -> set[str]:
    return {re.sub(r"s$", "", w) for w in re.findall(r"[a-z]+", phrase.lower())}


def noun_precision(method: str, sets: tuple[str, ...]) -> float:
    """Mean share of a window's (up to two) nouns that name one of its labelled phrases (all words of the shorter
    phrase in the longer one, plurals folded)."""
    windows = json.loads(FIXTURE.read_text())["windows"]
    scores = []
    for name in sets:
        docs = load_dataset(SETS[name]()).documents
        backend = ExtractCnm(noun_method=method).learned(docs)
        by_id = {d.doc_id: d for d in docs}
        for w in (w for w in windows if w["set"] == name):
            pred = backend.keyphrases(by_id[w["doc_id"]].text[w["start"]:w["end"]])
            hits = [any(_words(p) <= _words(g) or _words(g) <= _words(p) for g in w["nouns"]) for p in pred]
            scores.append(sum(hits) / max(len(pred), 1))
    return sum(scores) / len(scores)


def test_the_hand_labelled_windows_are_well_formed():
    data = json.loads(FIXTURE.read_text())
    assert len(data["windows"]) == 24 and all(len(w["nouns"]) >= 5 for w in data["windows"])
    assert {w["set"] for w in data["windows"]} == set(SETS)


def test_tfidf_keyphrases_beat_yake_on_the_sample_windows():
    tfidf, yake = noun_precision("tfidf", ("sample",)), noun_precision("yake", ("sample",))
    assert tfidf >= 0.7 and tfidf > yake


def test_tfidf_keyphrases_beat_yake_on_every_labelled_window():
    for name in ("eurorack_modules", "emanual_galaxy"):
        SETS[name]()  # skipped when the shared data is missing
    sets = tuple(SETS)
    tfidf, yake = noun_precision("tfidf", sets), noun_precision("yake", sets)
    assert tfidf >= 0.7 and tfidf > yake + 0.1


# ---- the backend on its own ----------------------------------------------------------------------------------


def test_titles_split_into_model_and_product_type():
    b = ExtractCnm()
    assert (b.name_of("# Brandco QX9 Cordless Drill — User Manual").model, b.name_of(
        "Brandco QX9 Cordless Drill — User Manual").category) == ("Brandco QX9", "Cordless Drill")
    assert b.name_of("Pad B 7.0 user guide").model == "Pad B 7.0"
    assert b.name_of("QX9 Lite owner's manual").model == "QX9 Lite"  # the variant stays part of the model


def _family(titles: list[str], text: str) -> ExtractCnm:
    from core.schema.documents import Document

    return ExtractCnm().learned([Document(f"d{i}", t, f"{t}\n{text}") for i, t in enumerate(titles)])


def test_a_family_word_stays_when_dropping_it_leaves_a_bare_number_and_a_title_without_digits_names_a_model():
    """Made-up family: "note" and "pad" are written in lower case in the text, so they read as product types,
    but "10" and "A 8.0" name nothing, and "Z Fold" is a name where the other titles name models."""
    text = "Please note the pad on the back. Take note of the note field. The pad holds the stylus. " * 5
    b = _family(["Brandco Orbit K5 user manual", "Brandco Orbit Note 10 user manual",
                 "Brandco Orbit Pad A 8.0 user manual", "Brandco Orbit Z Fold user manual",
                 "Brandco Orbit K7 user manual"], text)
    assert b.name_of("Brandco Orbit Note 10 user manual") == Name("Note 10", None)
    assert b.name_of("Brandco Orbit Pad A 8.0 user manual") == Name("Pad A 8.0", None)
    assert b.name_of("Brandco Orbit Z Fold user manual") == Name("Z Fold", None)
    assert b.name_of("Brandco Orbit K5 user manual") == Name("K5", None)
    # the words it reads short codes after are learned from these titles, not from a list
    assert {"Brandco", "Orbit", "Note", "Pad"} <= set(b.library.series)
    assert "K9" in models_in("Ask the Orbit K9 or the Note 9.", b.library.series)
    assert "K9" not in models_in("Ask the Orbit K9.")  # without the library, a short code needs a generic word


LICENCE = ".. Copyright (c) Brandco. Licensed under the Apache License, Version 2.0.\n   See the licence file.\n\n"


def test_uploads_named_by_their_files_are_tagged_by_the_heading_they_write(tmp_path):
    """Made-up board pages uploaded as files named like "quasar_k4_p.md": the file name loses the variant mark
    ("K4-P" is another board than "K4"), so the title the text writes (underlined, after a licence comment) names
    the model; the texts write the family's name with each model ("Quasar K4-P"), so it stays; the brand goes."""
    from core.ingest.documents import load_file
    from core.methods.chop.titles import written_title

    codes = {"quasar_k4": "K4", "quasar_k4_p": "K4-P", "quasar_k7": "K7", "quasar_6_mini": "6 Mini"}
    docs = []
    for stem, code in codes.items():
        title = f"Brandco Quasar {code}"
        body = (f"The Quasar {code} board has three LEDs and a reset button. Connect the Quasar {code} to a "
                "computer with a USB cable before you flash it. Reset the board after flashing.\n\n") * 6
        (tmp_path / f"{stem}.md").write_text(f"{LICENCE}{title}\n{'=' * len(title)}\n\nOverview\n--------\n\n{body}")
        docs.append(load_file(tmp_path / f"{stem}.md"))
    # a page that opens with a section ("Overview") and no title of its own: the file name, as its text spells it
    body = "The Quasar K9 Q board has three LEDs. Flash the Quasar K9-Q over USB. Reset the board after. " * 4
    (tmp_path / "quasar_k9_q.md").write_text(f"{LICENCE}Overview\n********\n\n{body}\n\nHardware\n********\n\n"
                                             f"{body}")
    docs.append(load_file(tmp_path / "quasar_k9_q.md"))
    codes["quasar_k9_q"] = "K9 Q"
    assert [d.title for d in docs] == list(codes)  # the loader keeps the file's name
    assert written_title(docs[1]) == "Brandco Quasar K4-P"
    run = chunk_documents(docs, make_chunker("chop", ChunkerContext(llm=ExtractCnm())))
    models = {d.doc_id: {c.meta["cnm"]["model"] for c in run.chunks if c.doc_id == d.doc_id} for d in docs}
    assert models == {"quasar_k4": {"Quasar K4"}, "quasar_k4_p": {"Quasar K4-P"}, "quasar_k7": {"Quasar K7"},
                      "quasar_6_mini": {"Quasar 6 Mini"}, "quasar_k9_q": {"Quasar K9 Q"}}
    assert written_title(docs[-1]) == "Quasar K9 Q"  # never the section heading "Hardware"
    # the type every page states after its model ("the Quasar K4 board") is the family's category
    assert {c.meta["cnm"]["category"] for c in run.chunks} == {"board"}


def test_a_brand_across_product_types_is_dropped_and_a_bare_number_keeps_its_family_word():
    """"Brandco" heads titles of a drill, a jigsaw and a lamp: a maker, dropped even though the texts write it with
    each model; "Orbit" is never written with "6 Mini" in the text, but "6 Mini" names nothing without it."""
    tools = _family(["Brandco QX9 Cordless Drill user manual", "Brandco RT4 Jigsaw user manual",
                     "Brandco K2 Desk Lamp user manual"],
                    "Thank you for buying the Brandco QX9, the Brandco RT4 or the Brandco K2. " * 5)
    assert "brandco" not in tools.library.family_words
    assert tools.name_of("Brandco RT4 Jigsaw user manual") == Name("RT4", "Jigsaw")
    orbit = _family(["Brandco Orbit 6 Mini user manual", "Brandco Orbit 7 user manual",
                     "Brandco Orbit K9 user manual"], "Charge it before first use. " * 5)
    assert orbit.name_of("Brandco Orbit 6 Mini user manual").model == "Orbit 6 Mini"
    # ... and so the family's name stays in every model of the library ("Orbit K9" beside "Orbit 7")
    assert orbit.name_of("Brandco Orbit K9 user manual").model == "Orbit K9"


def test_the_type_most_manuals_state_after_their_model_is_the_category_never_a_verb():
    """Made-up family: the titles name no type, but most texts write "the Orbit K5 flight controller" and also
    "a flight controller" on its own; every text repeats "the Orbit K5 keeps its settings" (a verb after the model,
    never written after a determiner), and the charger's text never states the type."""
    def text(code: str, states: bool) -> str:
        said = f"Mount the Orbit {code} flight controller on the frame. A flight controller needs power. " if states \
            else "Plug it into a wall socket. "
        return (said + f"The Orbit {code} keeps its settings when the power is off. Keep the Orbit {code} dry. ") * 4

    codes = {"K5": True, "K7": True, "V5 nano": True, "C2": False}
    from core.schema.documents import Document

    docs = [Document(f"d{i}", f"Brandco Orbit {code} user manual", text(code, states))
            for i, (code, states) in enumerate(codes.items())]
    b = ExtractCnm().learned(docs)
    assert b.library.stated_type == "flight controller"
    run = chunk_documents(docs, make_chunker("chop", ChunkerContext(llm=ExtractCnm())))
    cats = {d.doc_id: {c.meta["cnm"]["category"] for c in run.chunks if c.doc_id == d.doc_id} for d in docs}
    assert cats == {"d0": {"flight controller"}, "d1": {"flight controller"}, "d2": {"flight controller"},
                    "d3": {None}}
    # fewer than three manuals stating it: one manual's wording, not the family's type
    assert ExtractCnm().learned(docs[1:]).library.stated_type is None


def test_a_type_most_titles_share_is_the_category_and_never_stays_inside_a_model():
    """Made-up family whose titles all end with their product type: shared by most titles, it is the family's
    category, not a brand to drop; a title without a digit that ends with the type's head noun ("Zephyr Orange
    Controller") is a model and that type; the family's name is dropped from no model."""
    titles = ["Acme Zephyr 6C Flight Controller", "Acme Zephyr 7 Flight Controller",
              "Acme Zephyr V5 nano Flight Controller", "Acme Zephyr Orange Controller"]
    b = _family(titles, "Power the unit from its battery port. Calibrate the compass outdoors. " * 5)
    # "7" names nothing without "Zephyr", so the family's name stays in every model
    assert [b.name_of(t) for t in titles] == [Name(f"Zephyr {m}", "Flight Controller")
                                             for m in ("6C", "7", "V5 nano", "Orange")]
    # a shared word inside a name stays too: "Acme 6C" names no product
    b = _family(["Zephyr K6 user guide", "Zephyr K8 user guide", "Acme Zephyr 6C user guide"], "Charge it. " * 5)
    assert b.name_of("Acme Zephyr 6C user guide").model == "Acme Zephyr 6C"
    assert b.name_of("Zephyr K6 user guide").model == "K6"  # at its edge it goes


def test_in_a_family_a_description_one_manual_gives_is_its_wording_not_a_type():
    """Made-up family: one manual opens "The Orbit K7 is a drop-in replacement for the K5"; no other describes
    itself, so that is no product type (it was the category before). Where most manuals open "A flight controller
    for ...", the type is given."""
    from core.schema.documents import Document

    def docs(openings: list[str]) -> list[Document]:
        return [Document(f"d{i}", f"Brandco Orbit K{i + 5} user manual",
                         f"{opening}\nCharge the battery before first use. " * 8) for i, opening in enumerate(openings)]

    lone = docs(["Read the safety notes first.", "The Orbit K6 is a drop-in replacement for the K5.",
                 "Read the safety notes first.", "Read the safety notes first."])
    b = ExtractCnm().learned(lone)
    assert b.tag(lone[1].text, title=lone[1].title)[0].category is None
    assert described_type(lone[1].text) == "drop-in replacement"  # what the first lines say, all the same
    shared = docs(["A flight controller for small frames."] * 3 + ["Read the safety notes first."])
    b = ExtractCnm().learned(shared)
    assert b.tag(shared[0].text, title=shared[0].title)[0].category == "flight controller"


def test_no_product_type_stated_leaves_the_category_unknown_and_says_why():
    b = _family(["Brandco Orbit K5 user manual", "Brandco Orbit K7 user manual", "Brandco Orbit K9 user manual"],
                "Use biometrics to unlock. The screen is designed for pens. Stabilization: Activate anti-shake to "
                "keep focus. The battery charges fast. " * 10)
    cnm, sources = b.tag("Brandco Orbit K5 user manual\nThe battery charges fast. Use biometrics to unlock.",
                         title="Brandco Orbit K5 user manual")
    assert cnm.model == "K5" and cnm.category is None and sources["category"] == UNKNOWN_CATEGORY
    assert described_type("Use biometrics to unlock.\nThe pen is designed for notes.\nFace, or iris to go.") is None
    assert described_type("AVRDUDE\nA program for download/uploading") == "program"  # what a first page states
    assert described_type("Abstract Syntax Notation One (ASN.1) library for the GNU system") == "library"


@pytest.mark.parametrize("name", ["eurorack_modules", "emanual_galaxy"])
@pytest.mark.parametrize("join", [False, True])
def test_a_wrong_category_is_rare_where_no_title_names_the_product_type(name, join):
    """Neither set's titles name the product type, and most chunks' categories used to be wrong with full
    confidence (1.00 wrong on both): a category is now given only where something states it."""
    data = _galaxy() if name == "emanual_galaxy" else load_dataset(shared_dataset(name))
    acc, _ = _accuracy(data, join)
    assert acc.category.wrong <= 0.10
    if not join:
        assert acc.model.right >= 0.94


def test_a_question_is_tagged_with_a_library_model_never_a_variant_it_lacks():
    from core.schema.documents import Document

    docs = [Document("a", "Brandco QX9 Drill manual", "The QX9 drill. " * 20),
            Document("b", "Brandco QX9 Lite Drill manual", "The QX9 Lite drill. " * 20),
            Document("c", "Brandco RT4 Saw manual", "The RT4 saw. " * 20)]
    shared = ExtractCnm()
    b = shared.learned(docs)
    questions = ["How do I charge the QX9 Lite?", "Does the QX9 have a light?", "Blade of the RT4 saw"]
    assert [r.cnm.model for r in b.extract(questions)] == ["QX9 Lite", "QX9", "RT4"]
    assert shared.library.models == []  # the backend the services share learned nothing
    # the retrieval policy tags questions against the models a run's chunks carry, with no library at all
    assert [r.cnm.model for r in shared.tag_queries(questions, ["RT4", "QX9", "QX9 Lite"])] == \
        ["QX9 Lite", "QX9", "RT4"]
    # a year two models end with names neither of them; a tail only one model has names it
    assert [r.cnm.model for r in shared.tag_queries(["Shades 2020: what is the lifetime?", "Does the QX9 drill?"],
                                                    ["Ripples 2020", "Shades 2020", "Brandco QX9"])] == \
        ["Shades 2020", "Brandco QX9"]
    assert ExtractCnm().key == "extract:v7" and ExtractCnm(noun_method="yake").key == "extract:v7:nouns=yake"
