"""Product and model names: the normaliser and the same-model test that CHOP's tags (`core.methods.chop`) and title
routing (`core.store.routing`) share, so both read "Galaxy S10", "S10" and "SM-G973F" the same way. Generic code,
so routing does not reach into a method's package; `core.methods.chop.rules` re-exports it."""

from __future__ import annotations

import re

# words that make another model of the same line: "S10 Lite" is not an "S10", "S20 Ultra 5G" not an "S20"
VARIANT_WORDS = ("lite", "plus", "ultra", "pro", "max", "mini", "nano", "micro", "active", "edge", "fe", "neo", "5g",
                 "duos", "xl")


def normalise_model(model: str | None) -> str:
    return re.sub(r"[\s_-]+", "", (model or "")).lower()


def models_match(a: str | None, b: str | None) -> bool:
    """Same model: equal after normalising, or one names the other in full with only family words added
    ("Galaxy S10" vs "S10"), never a variant ("S10 Lite", "S20 Ultra 5G") or another number."""
    if not a or not b:
        return False
    if normalise_model(a) == normalise_model(b):
        return True
    ta, tb = set(re.split(r"[\s_]+", a.lower())), set(re.split(r"[\s_]+", b.lower()))
    small, big = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    extra = big - small
    return small <= big and not any(w in VARIANT_WORDS or re.search(r"\d", w) for w in extra)
