"""Each part of a CNM tag carries the confidence of the evidence it came from (`core.methods.chop.evidence`): read
from the part's source, measured over every set with gold tags (the committed `bench.cnm` report), shown to the
person inspecting, and a part whose evidence is below the threshold is not given."""

from __future__ import annotations

import json

import pytest

from core.methods.chop import evidence
from core.methods.chop.accuracy import by_source
from core.methods.chop.evidence import (
    BY_HAND,
    CONFIDENCE,
    FAMILY,
    FREQUENCY,
    THRESHOLD,
    evidence_kind,
    measured_confidence,
    part_confidence,
    sources_text,
    trusted,
    withheld,
    withheld_guess,
)
from core.methods.chop.extract import UNKNOWN_CATEGORY
from core.schema.chunks import Chunk
from tests.support.data import ROOT


def test_each_source_names_its_kind_of_evidence():
    assert evidence_kind("title") == "title" and evidence_kind(BY_HAND) == BY_HAND
    assert evidence_kind("family: mi-shades's correction") == FAMILY
    assert evidence_kind("its own title (the family's title template)") == FAMILY
    assert evidence_kind(UNKNOWN_CATEGORY) == evidence.UNKNOWN and evidence_kind(None) is None
    assert part_confidence(UNKNOWN_CATEGORY) == 0.0 and part_confidence(None) is None
    assert part_confidence("title") == CONFIDENCE["title"] and part_confidence(BY_HAND) == 1.0


def test_the_inspector_line_gives_each_tagged_part_its_confidence():
    line = sources_text({"category": "description", "nouns": "keyphrase", "model": "title"})
    assert f"category: description ({CONFIDENCE['description']:.2f})" in line
    assert f"model: title ({CONFIDENCE['title']:.2f})" in line
    assert "nouns: keyphrase" in line and "keyphrase (" not in line  # nouns have no gold to measure them by
    assert "(0.00)" not in sources_text({"category": UNKNOWN_CATEGORY})  # unknown says why, not a figure


def test_a_badge_says_how_far_its_part_is_trusted():
    from components.html import cnm_badges_html
    from core.methods.chop.cnm import CNM

    html = cnm_badges_html(CNM(category="air conditioner", model="K5"), "extracted",
                           {"category": "description", "model": "title"})
    assert f"description, confidence {CONFIDENCE['description']:.2f}" in html
    assert f"title, confidence {CONFIDENCE['title']:.2f}" in html


def test_a_part_from_weak_evidence_is_withheld_saying_what_it_would_have_been():
    assert trusted("title") and trusted("family: mi-shades's correction") and trusted(BY_HAND)
    assert not trusted("first page") and not trusted(FREQUENCY)
    reason = withheld("first page", "Galaxy S9")
    assert reason.startswith("unknown: only the first page named it") and f"{CONFIDENCE['first page']:.0%}" in reason
    assert withheld_guess(reason) == ("first page", "Galaxy S9") and evidence_kind(reason) == evidence.UNKNOWN
    assert withheld_guess(UNKNOWN_CATEGORY) is None and withheld_guess(None) is None


def _chunk(index: int, cnm: dict, sources: dict) -> Chunk:
    return Chunk("ac", index * 10, index * 10 + 10, "text", 1, index=index,
                 meta={"cnm": {"category": None, "nouns": [], "model": None, "confidence": 0.5, **cnm},
                       "cnm_sources": sources})


def test_by_source_counts_right_wrong_and_unknown_per_kind_and_what_a_frequency_would_have_said():
    from core.schema.documents import Document

    doc = Document("ac", "Acme K5 manual", "x" * 40, cnm={"category": "air conditioner", "model": "K5"})
    chunks = [_chunk(0, {"category": "split air conditioner", "model": "K5"},
                     {"category": "title", "model": "title"}),
              _chunk(1, {"category": "remote control", "model": "K5"}, {"category": "description", "model": "title"}),
              _chunk(2, {}, {"category": UNKNOWN_CATEGORY, "model": withheld(FREQUENCY, "K5")}),
              _chunk(3, {}, {"model": withheld("first page", "E4")})]
    counts = by_source(chunks, [doc])
    assert counts["category"]["title"] == {"right": 1, "wrong": 0, "unknown": 0}
    assert counts["category"]["description"] == {"right": 0, "wrong": 1, "unknown": 0}
    assert counts["category"]["unknown"]["unknown"] == 1 and counts["category"]["not said"]["unknown"] == 1
    assert counts["model"]["title"]["right"] == 2 and counts["model"]["unknown"]["unknown"] == 2
    assert counts["model"][f"{FREQUENCY} (not given)"] == {"right": 1, "wrong": 0, "unknown": 0}
    assert counts["model"]["first page (not given)"] == {"right": 0, "wrong": 1, "unknown": 0}


def test_the_confidences_are_the_committed_measurement():
    """CONFIDENCE is the lower end of the 95% interval of each kind of evidence's pooled precision in
    docs/results/cnm_shares.json (rounded down to two places): a change of the extractor that moves them is
    measured again, not edited by hand."""
    pooled = json.loads((ROOT / "docs" / "results" / "cnm_shares.json").read_text(encoding="utf-8"))["by_source"]
    measured = {kind.removesuffix(" (not given)"): n for kind, n in pooled.items() if n["right"] + n["wrong"]}
    for kind, n in measured.items():
        if kind in CONFIDENCE and kind != BY_HAND:
            assert CONFIDENCE[kind] == pytest.approx(measured_confidence(n["right"], n["wrong"])), kind
            assert CONFIDENCE[kind] <= n["right"] / (n["right"] + n["wrong"])  # never above the point share
    assert {"title", FAMILY, FREQUENCY, "first page"} <= set(measured)
    assert CONFIDENCE[FREQUENCY] < THRESHOLD <= CONFIDENCE["title"]
