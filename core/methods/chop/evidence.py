"""How far each part of a CNM tag can be trusted, read from where the part came from.

The `extract` backend and the family corrections say, for each part of a tag, where it came from
(`meta["cnm_sources"]`: a title, a heading, the first page, a description, a keyphrase, a person's correction, a
correction carried over from another manual of the family). Each kind of evidence has a confidence: the lower
end of the 95% Wilson interval of the share of parts it gave that matched the gold tag, pooled over every set with
gold tags (`python -m bench.cnm`, whose `by_source` key counts them per set; docs/METHODS.md has the table). The
lower end, not the share: 1,642 right titles and none wrong say "at least 0.99", not "never wrong". A part whose
evidence is below `THRESHOLD` is not given: the extractor leaves it empty and the inspector shows it as unknown,
with why and with what it would have been. A person's correction is taken as certain.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

#: the source of a part a person typed in the CNM inspector (or gave in a `--cnm-examples` file)
BY_HAND = "corrected by hand"
#: the source of a part carried from another manual's correction (`core.methods.chop.family`)
FAMILY = "family"
#: a model that only a token's frequency in the run points to (no title, heading or first page names it)
FREQUENCY = "frequency"
UNKNOWN = "unknown"

#: each kind of evidence's confidence: `measured_confidence` of the parts it gave, over the chunks of every set
#: with gold tags (sample_data, eurorack_modules and emanual_galaxy, separate and joined, and the PDFs of
#: tests/fixtures/debian), both parts pooled;
#: measured by `python -m bench.cnm --one-example` (its `by_source` counts)
CONFIDENCE: dict[str, float] = {
    BY_HAND: 1.0,  # a person's word is not measured against the gold; it is the gold's kind
    "title": 0.99,  # 1,642 right, 0 wrong
    "heading": 0.97,  # 332 right, 3 wrong
    "description": 0.97,  # 126 right ("X is a ..." in the two PDF manuals)
    FAMILY: 0.94,  # 77,876 right, 4,032 wrong (a phone's type carried to the tablets and the band)
    "first page": 0.28,  # 341 right, 754 wrong (emanual_galaxy joined, where 7 manuals never name their model)
    FREQUENCY: 0.0,  # 0 right, 74 wrong
}
#: below this, a part is not given (the extractor says "unknown" and why)
THRESHOLD = 0.5
PARTS = ("category", "nouns", "model")


def measured_confidence(right: int, wrong: int) -> float:
    """The lower end of the 95% Wilson interval of right / (right + wrong), rounded down to two places: what a
    kind of evidence can claim from the parts it gave, however few (0.0 when it gave none)."""
    from scipy.stats import binomtest

    if right + wrong == 0:
        return 0.0
    low = binomtest(right, right + wrong).proportion_ci(confidence_level=0.95, method="wilson").low
    return math.floor(round(low, 9) * 100) / 100


def evidence_kind(source: str | None) -> str | None:
    """The kind of evidence a part's source string names (`CONFIDENCE`'s keys, `UNKNOWN` or "keyphrase"), None
    when there is no source (the rule and prompted backends do not say where a part came from)."""
    if not source:
        return None
    if source.startswith(UNKNOWN):
        return UNKNOWN
    if source.startswith(FAMILY) or source.startswith("its own title"):
        return FAMILY
    return source


def part_confidence(source: str | None) -> float | None:
    """The confidence of a part that came from `source`; 0 for an unknown part, None when nothing is known."""
    kind = evidence_kind(source)
    if kind is None:
        return None
    return 0.0 if kind == UNKNOWN else CONFIDENCE.get(kind)


def trusted(source: str) -> bool:
    """Whether a part that came from `source` is given: its kind of evidence is at or above `THRESHOLD`."""
    return CONFIDENCE.get(evidence_kind(source) or "", 0.0) >= THRESHOLD


def withheld(source: str, value: str) -> str:
    """The reason an untrusted part is left unknown, saying what it would have been: "unknown: only the first
    page named it, and the first page was right on at least 28% of the parts it gave on the sets with gold tags
    (it read: K5 Mini)": the confidence is the lower end of an interval. `withheld_guess` reads the source and the
    value back."""
    return _WITHHELD.format(source=source, share=f"{CONFIDENCE.get(source, 0.0):.0%}", value=value)


def withheld_guess(source: str | None) -> tuple[str, str] | None:
    """(source, value) of a part `withheld` left unknown; None for any other source."""
    found = _WITHHELD_READ.match(source or "")
    return (found["source"], found["value"]) if found else None


_WITHHELD = ("unknown: only the {source} named it, and the {source} was right on at least {share} of the parts it "
             "gave on the sets with gold tags (it read: {value})")
#: `_WITHHELD` read back: the template itself, its fields as groups (the source named twice, the share a percentage)
_WITHHELD_READ = re.compile(re.escape(_WITHHELD).replace(re.escape("{source}"), "(?P<source>.+?)", 1)
                            .replace(re.escape("{source}"), "(?P=source)").replace(re.escape("{share}"), r"\d+%")
                            .replace(re.escape("{value}"), "(?P<value>.+)") + "$")


def sources_text(sources: Mapping[str, str] | None) -> str:
    """Where each part of a tag came from and how far it can be trusted, for a person checking it:
    "category: description (1.00) · model: title (0.96)". Nouns have no gold, so no confidence."""
    sources = sources or {}
    out = []
    for part in PARTS:
        source = sources.get(part)
        if not source:
            continue
        confidence = part_confidence(source) if part != "nouns" else None
        known = confidence is not None and evidence_kind(source) != UNKNOWN
        out.append(f"{part}: {source}" + (f" ({confidence:.2f})" if known else ""))
    return " · ".join(out)
