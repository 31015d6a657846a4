"""Generated questions (`core.evaluation.questions`): evidence located exactly, copies, duplicates and malformed
answers rejected and counted, passages drawn where near-duplicate documents differ, the set written and read back,
all with a scripted model (the whole run through real servers and `python -m core questions`:
tests/integration/test_questions_end_to_end.py)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from core.evaluation.questions import (
    COPY_RUN_SHARE,
    COPY_THRESHOLD,
    GeneratedSet,
    QuoteIndex,
    check_answer,
    copies_evidence,
    generate_questions,
    is_duplicate,
    locate_quote,
    looks_like_question,
    parse_answer,
    product_of,
    sample_passages,
    write_set,
)
from core.infra.errors import GenerationError
from core.ingest.datasets import load_dataset
from core.llm.base import AnswerCache, ChatAnswer, LLMClient, LLMError
from core.schema.documents import Document
from tests.support.fakes import ScriptedChat

SHARED = ("Thank you for choosing this heater. Read this manual before you use the appliance. Keep it for later.\n\n"
          "Place the heater on a flat, stable surface away from curtains and furniture. Do not cover the heater "
          "while it is running.\n\n"
          "Press the power button to switch the heater on. The indicator lights up when the heater is ready.\n\n"
          "Clean the dust filter with a soft brush when the indicator blinks. Never wash it in a dishwasher.\n\n")
HEATER_A = SHARED + "The heating element draws 1500 W at full power and the thermal fuse opens at 95 °C.\n"
HEATER_B = SHARED + "The heating element draws 2000 W at full power and the thermal fuse opens at 105 °C.\n"


KETTLE = ("Fill the kettle with at least 0.5 l of water and at most 1.7 l, up to the MAX mark.\n\n"
          "Place the kettle on its base and press the switch; the blue light shows that it is heating.\n\n"
          "The kettle switches off by itself when the water boils, after about four minutes for a full kettle.\n\n"
          "Descale the kettle every month with a solution of citric acid if your water is hard.\n")


def two_products() -> list[Document]:
    """A heater and a kettle: no sentence in common, so every request differs and every question is new."""
    return [Document("heater-a", "Heater HA-15", HEATER_A, cnm={"model": "HA-15"}),
            Document("kettle", "Kettle K2 manual", KETTLE)]


def heaters() -> list[Document]:
    return [Document("heater-a", "Heater HA-15", HEATER_A, cnm={"model": "HA-15"}),
            Document("heater-b", "Heater HB-20 manual", HEATER_B)]


# --- locating quotes ---------------------------------------------------------------------------------------------

def test_a_quote_matches_across_whitespace_and_quote_marks_and_keeps_the_original_offsets():
    text = "Intro.\n\nSet the dial to \u201cEco\u201d  and wait\n   for the\tbeep. Then go on."
    span = locate_quote(text, 'Set the dial to "Eco" and wait for the beep.')
    assert span == (text.index("Set"), text.index("beep.") + len("beep."))
    assert text[span[0]:span[1]] == "Set the dial to \u201cEco\u201d  and wait\n   for the\tbeep."
    curly = "It\u2019s the \u2018reset\u2019 key that clears the memory."
    assert locate_quote(curly, "It's the 'reset' key that clears") == (0, curly.index(" that") + len(" that clears"))


def test_a_quote_found_twice_or_nowhere_or_too_short_is_rejected_with_its_reason():
    text = "Unplug the unit before cleaning. Dry it well. Unplug the unit before cleaning."
    assert locate_quote(text, "Unplug the unit before cleaning.") == "quote found more than once"
    assert locate_quote(text, "Unplug the heater before cleaning.") == "quote not found"
    assert locate_quote(text, "Dry it") == "quote too short"
    assert locate_quote(text, "Dry it well.") == (text.index("Dry"), text.index("well.") + 5)


# --- judging answers ---------------------------------------------------------------------------------------------

def test_a_question_that_copies_its_evidence_is_rejected_and_a_paraphrase_is_kept():
    evidence = "Clean the dust filter with a soft brush when the indicator blinks."
    copy = "When the indicator blinks, clean the dust filter with a soft brush?"
    assert copies_evidence(copy, evidence)
    assert not copies_evidence("How do I clean the dust filter?", evidence)  # all its words are there, no long run
    assert not copies_evidence("What should I use to tidy up the filter?", evidence)
    assert (COPY_THRESHOLD, COPY_RUN_SHARE) == (0.9, 0.7)  # the measured values the docstring and README state

    doc = heaters()[0]
    start = HEATER_A.index(evidence)
    passage = sample_passage(doc, start, start + len(evidence))
    index = QuoteIndex(doc.text)
    copied = check_answer(ChatAnswer(json.dumps({"question": copy})), passage, "pick", index, [])
    kept = check_answer(ChatAnswer(json.dumps({"question": "How do I clean the dust filter?"})), passage, "pick",
                        index, [])
    assert copied.reason == "copies its evidence"
    assert kept.reason is None and kept.span == (start, start + len(evidence))


def sample_passage(doc: Document, start: int, end: int):
    from core.evaluation.questions import Passage

    return Passage(doc.doc_id, start, end, 1.0)


def test_malformed_and_non_questions_and_duplicates_are_named():
    doc = heaters()[0]
    evidence = "Press the power button to switch the heater on."
    start = HEATER_A.index(evidence)
    passage, index = sample_passage(doc, start, start + len(evidence)), QuoteIndex(doc.text)

    def verdict(text: str, kept: list[str] | None = None, design: str = "pick", error: str | None = None):
        return check_answer(ChatAnswer(text, error=error), passage, design, index, kept or []).reason

    assert verdict("Sure! Here is a question about the heater.") == "malformed answer"
    assert verdict('{"question": "   "}') == "malformed answer"
    assert verdict('["How do I start it?"]') == "malformed answer"
    assert verdict('{"question": "How do I start it?"}', design="quote") == "malformed answer"  # no quote
    assert verdict('{"question": "The power button."}') == "not a question"
    assert verdict("", error="server error") == "no answer from the model"
    assert verdict('Here: {"question": "How do I turn the heater on?"} hope it helps') is None
    assert verdict('{"question": "How do I turn the heater on?"}', kept=["how do I turn the heater on"]) == "duplicate"
    assert is_duplicate("How do I turn on the heater?", ["How do I turn the heater on?"])  # same content words
    assert not is_duplicate("What does the indicator show?", ["How do I turn the heater on?"])
    assert looks_like_question("Which fuse protects the element") and not looks_like_question("Power button")
    assert parse_answer('{"question": "Where  is\\nthe fuse?"}', "pick") == {"question": "Where is the fuse?"}
    framed = '{"question": "What is the answer to the question: How hot can the element get?"}'
    assert parse_answer(framed, "pick") == {"question": "How hot can the element get?"}
    assert parse_answer('{"question": "Question: "}', "pick") is None


def test_the_same_question_about_two_near_duplicate_products_is_kept_for_each():
    """Product-named questions: the same words asked of two manuals are two questions with two answers, and the
    hardest for a chunker; asked twice of one manual, the second is a duplicate."""
    same = ScriptedChat(lambda prompt: json.dumps({"question": "How much power does the heater draw?"}))
    generated = generate_questions(heaters(), same.client(), 3, seed=0)
    assert sorted(q.product for q in generated.questions) == ["HA-15", "Heater HB-20 manual"]
    assert len(generated.questions) == 2 and generated.rejected == Counter({"duplicate": 7})
    assert generated.attempts == 9  # three passages per question wanted, all asked


# --- where to ask ------------------------------------------------------------------------------------------------

def test_passages_prefer_the_facts_that_differ_between_near_duplicate_documents():
    """Two manuals that differ in one sentence: its wattage and fuse temperature. That sentence is each document's
    first draw for most seeds, though each document holds five others; the same seed draws the same passages."""
    docs = heaters()
    firsts = Counter()
    for seed in range(20):
        drawn = sample_passages(docs, 2, seed)
        assert {p.doc_id for p in drawn} == {"heater-a", "heater-b"}  # both documents asked about
        for p in drawn:
            text = HEATER_A if p.doc_id == "heater-a" else HEATER_B
            firsts[text[p.start:p.end].startswith("The heating element draws")] += 1
        assert sample_passages(docs, 2, seed) == drawn
    assert firsts[True] >= 30, firsts  # 40 draws; a uniform draw among six sentences would give about 7
    distinctive = [p for p in sample_passages(docs, 12, 0) if p.distinctive]
    assert {f for p in distinctive for f in p.distinctive} >= {"1500w", "2000w", "95°c", "105°c"}


def test_passages_spread_across_a_long_document():
    text = "\n\n".join(f"Section {i}. Set the timer to {i} minutes before you start program P{i}." for i in range(60))
    drawn = sample_passages([Document("long", "Long", text)], 6, seed=3)
    starts = sorted(p.start for p in drawn)
    assert len(drawn) == 6 and starts[0] < len(text) / 3 and starts[-1] > 2 * len(text) / 3


# --- products and writing ----------------------------------------------------------------------------------------

def test_the_product_is_the_gold_model_else_the_title():
    a, b = heaters()
    assert product_of(a) == "HA-15" and product_of(b) == "Heater HB-20 manual"


def scripted_questions(prompt: str) -> str:
    """A question per evidence, made from the evidence's second, fourth and last words and its length: never a
    copy, and never a duplicate in the heater documents (whose shared sentences get one question each)."""
    evidence = re.search(r"<evidence>\n(.*)\n</evidence>", prompt, re.S).group(1)
    words = re.findall(r"\w+", evidence)
    return json.dumps({"question": f"What is said about {words[1]} {words[3]} {words[-1]} {len(prompt)}?"})


def test_a_written_set_loads_back_with_products_and_exact_evidence(tmp_path):
    docs = two_products()
    generated = generate_questions(docs, ScriptedChat(scripted_questions).client(), 4, seed=0)
    assert len(generated.questions) == 4 and generated.attempts == 4 and not generated.rejected
    folder = write_set(tmp_path / "set", docs, generated)
    ds = load_dataset(folder)
    assert [q.question for q in ds.questions] == [q.question for q in generated.questions]
    texts = {d.doc_id: d.text for d in ds.documents}
    for q in ds.questions:
        (ref,) = q.references
        assert q.answer == texts[ref.doc_id][ref.start:ref.end]
        assert q.product == {"heater-a": "HA-15", "kettle": "Kettle K2 manual"}[ref.doc_id]
        assert q.text(qualify=True) == f"{q.product}: {q.question}"
    assert ds.documents[0].cnm == {"model": "HA-15"}
    readme = (folder / "README.md").read_text()
    assert "prompt version: questions-v2" in readme and "design: pick" in readme and "copy rule" in readme
    assert "scripted chat" in readme
    with pytest.raises(GenerationError, match="not an empty folder"):
        write_set(folder, docs, generated)
    with pytest.raises(GenerationError, match="no question kept"):
        write_set(tmp_path / "empty", docs, GeneratedSet([], Counter({"quote not found": 3}), "m"))


# --- the run, with a scripted model ------------------------------------------------------------------------------

def test_every_answer_is_kept_or_counted_and_a_rerun_asks_nothing(tmp_path):
    answers = iter(["no json at all", '{"question": "Heater"}', None, None, None, None, None, None, None, None])

    def script(prompt: str) -> str:
        nxt = next(answers, None)
        return nxt if nxt is not None else scripted_questions(prompt)

    docs = two_products()
    cache = AnswerCache(tmp_path / "answers.sqlite")
    first = generate_questions(docs, LLMClient(ScriptedChat(script), cache), 3, seed=1)
    assert first.rejected == Counter({"malformed answer": 1, "not a question": 1})
    assert len(first.questions) == 3 and first.attempts == 5 and first.calls == 5 and first.cached == 0
    again = generate_questions(docs, LLMClient(ScriptedChat(lambda p: LLMError("must not be asked")), cache), 3,
                               seed=1)
    assert again.calls == 0 and again.cached == 5
    assert again.questions == first.questions and again.rejected == first.rejected


def test_should_stop_stops_between_requests_and_the_rest_comes_later(tmp_path):
    docs = two_products()
    cache = AnswerCache(tmp_path / "answers.sqlite")
    seen: list[tuple[int, int]] = []
    stopped = generate_questions(docs, LLMClient(ScriptedChat(scripted_questions), cache), 4, seed=2,
                                 progress=lambda d, t: seen.append((d, t)), should_stop=lambda: len(seen) >= 2)
    assert stopped.stopped and len(stopped.questions) == 2 and stopped.calls == 2
    assert seen == [(1, 12), (2, 12)]
    resumed = generate_questions(docs, LLMClient(ScriptedChat(scripted_questions), cache), 4, seed=2)
    assert not resumed.stopped and len(resumed.questions) == 4
    assert resumed.cached == 2 and resumed.calls == 2  # only the two not asked before


def test_the_quote_design_locates_the_models_quote():
    docs = two_products()

    def script(prompt: str) -> str:
        passage = re.search(r"<passage>\n(.*)\n</passage>", prompt, re.S).group(1)
        sentence = re.split(r"(?<=\.)\s", passage.strip())[0]
        words = re.findall(r"\w+", sentence)
        quote = "  ".join(sentence.split(" ")).replace("'", "\u2019")  # other whitespace: still found
        return json.dumps({"question": f"What is said about {words[1]} {words[3]} {words[-1]}?", "quote": quote})

    generated = generate_questions(docs, ScriptedChat(script).client(), 2, design="quote", seed=0)
    for q in generated.questions:
        doc = next(d for d in docs if d.doc_id == q.references[0].doc_id)
        ref = q.references[0]
        assert " ".join(doc.text[ref.start:ref.end].split()) == " ".join(q.answer.split())
        assert q.extra["design"] == "quote"
    assert len(generated.questions) == 2 and not generated.rejected  # curly quotes, doubled spaces: still found
    assert generated.attempts >= 2 and sum(generated.rejected.values()) + len(generated.questions) == generated.attempts


def test_a_backend_that_cannot_answer_is_an_llm_error():
    with pytest.raises(LLMError, match="could not answer"):
        generate_questions(two_products(), ScriptedChat(lambda p: LLMError("connection refused")).client(), 2)
    with pytest.raises(GenerationError, match="design"):
        generate_questions(two_products(), ScriptedChat(scripted_questions).client(), 2, design="guess")
    with pytest.raises(GenerationError, match="no documents"):
        generate_questions([Document("e", "E", "  \n")], ScriptedChat(scripted_questions).client(), 2)
