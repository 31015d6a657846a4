"""The part-of-speech check behind a CNM category (core.methods.chop.speech): nouns pass, verbs and adjectives
do not, a word is read in the sentence the text writes it in, and the extractor gives no category the tagger
reads as anything but a noun phrase."""

from __future__ import annotations

import pytest

from core.chunkers.base import ChunkerContext
from core.chunkers.registry import make_chunker
from core.methods.chop.extract import ExtractCnm
from core.methods.chop.reading import Name, described_type, types_after_models
from core.methods.chop.speech import noun_headed
from core.pipeline import chunk_documents
from core.schema.documents import Document
from tests.support.data import ROOT


@pytest.mark.parametrize("phrase", ["flight controller", "Battery Charger", "program", "air conditioner",
                                    "macro-oscillator", "Eurorack synthesizer module", "charging dock",
                                    # nouns the lexicon knows mostly as verbs or comparatives, and one it lacks
                                    "heart rate monitor", "pump", "watch", "vacuum cleaner", "dehumidifier"])
def test_product_types_are_noun_phrases(phrase):
    assert noun_headed(phrase)


@pytest.mark.parametrize("phrase", ["optimized", "designed", "Supports", "compatible", "manages", ""])
def test_verbs_and_adjectives_are_not(phrase):
    assert not noun_headed(phrase)


def _listed(text: str) -> list[str]:
    return text.split()


TYPE_WORDS = _listed("""
    monitor switch display light mount shield hub sensor charger speaker drill saw press router drive cooker fan
    heater kettle watch phone tablet printer scanner lamp fridge washer dryer iron blender mixer filter pump
    controller board kit module camera oscillator attenuator sampler sequencer cleaner purifier alarm bank cam hood
    program library compiler editor shell utility conditioner dehumidifier humidifier smartphone smartwatch band
    tracker headset earbuds keyboard mouse receiver amplifier synthesizer drone robot vacuum toothbrush shaver oven
    microwave thermostat lock doorbell projector television radio tuner interface adapter dock stand case cover
    battery inverter regulator attenuverter""")
OTHER_WORDS = _listed("""
    optimized designed supports provides compatible keeps manages works includes made built allows enables uses
    offers lets comes runs powered based featuring intended available new improved latest original advanced
    portable wireless smart faster better bigger""")


def test_the_measured_word_lists_as_docs_methods_reports_them():
    """The figures docs/METHODS.md gives for the tagger: of these 92 product-type words it misses three, of these
    34 verbs and adjectives it lets two pass."""
    assert len(TYPE_WORDS) == 92 and len(OTHER_WORDS) == 34
    assert [w for w in TYPE_WORDS if not noun_headed(w)] == ["saw", "stand", "cover"]
    assert [w for w in OTHER_WORDS if noun_headed(w)] == ["works", "better"]


def test_a_word_is_read_in_its_sentence():
    assert not noun_headed("keeps", "The Orbit K5 keeps its settings when the power is off.")
    assert not noun_headed("supports", "The Orbit K5 supports four motors.")
    assert noun_headed("monitor", "The Acme X5 monitor is easy to use.")
    assert noun_headed("board", "The Nucleo F401RE board features an ARM core.")
    # a phrase its context does not hold is read on its own
    assert noun_headed("board", "Nothing here.")


def _docs(titles: list[str], text: str) -> list[Document]:
    return [Document(f"d{i}", t, f"{t.split(' user')[0]}. {text}") for i, t in enumerate(titles)]


def test_a_title_word_after_the_model_that_is_no_noun_is_no_category():
    """Made-up titles that end with a word of praise: "Optimized" follows the model where a product type would,
    but it is no product type, so the category is left to other evidence (here none: unknown)."""
    titles = ["Brandco Orbit K5 Optimized user manual", "Brandco Orbit K7 Optimized user manual",
              "Brandco Orbit K9 Flight Controller user manual"]
    docs = _docs(titles, "Charge the battery before first use. " * 6)
    b = ExtractCnm().learned(docs)
    assert b.name_of(titles[0]) == Name("Orbit K5", None, not_a_type="Optimized")
    assert b.name_of(titles[2]) == Name("Orbit K9", "Flight Controller")
    run = chunk_documents(docs, make_chunker("chop", ChunkerContext(llm=ExtractCnm())))
    first = [c for c in run.chunks if c.doc_id == "d0"]
    assert {c.meta["cnm"]["category"] for c in first} == {None}
    # the inspector says why: the word it read, and that it is no noun phrase
    assert 'the title\'s "Optimized" is not a noun phrase' in first[0].meta["cnm_sources"]["category"]


def test_a_verb_after_the_model_is_never_a_stated_type_even_when_written_after_a_determiner():
    """"supports" follows the model in every text and also stands after "the" ("the supports of the frame"), so
    the determiner rule alone took it; the tagger reads it as a verb where it follows the model."""
    named = [(f"Orbit K{i}", f"The Orbit K{i} supports four motors. Fix the supports of the frame first. " * 3)
             for i in (5, 7, 9)]
    assert "supports" not in types_after_models(named)
    board = [(f"Nucleo F{i}", f"The Nucleo F{i} board features an ARM core. Power the board by USB. ")
             for i in (401, 411, 446)]
    assert types_after_models(board)["board"] == 3


def test_a_described_clause_is_no_type():
    assert described_type("Orbit K5\nThe orbit is designed for racing frames.\n") is None
    assert described_type("avrdude\nA program for downloading code to AVR chips.\n") == "program"


def test_the_tagger_loads_without_the_textblob_package_and_its_nltk():
    """Importing textblob runs its __init__, which imports NLTK and scipy.stats (1.7 s in a cold process); the
    tagger loads TextBlob's tagger module from its file, so a CHOP run pays for neither."""
    import subprocess
    import sys

    code = ("import sys; from core.methods.chop.speech import noun_headed; assert noun_headed('board'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'textblob')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(ROOT)).stdout
    assert out.strip() == "[]"
