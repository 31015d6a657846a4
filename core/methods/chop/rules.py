"""A CNM backend with no model: a real, rule-based extractor, labelled as such everywhere it is shown.

- model: model-number patterns (letters and digits together: 225B, X100, SM-G973F, X-SERIES), minus things
  that look like models but are not (units, IP ratings, refrigerants, battery sizes);
- category: a lexicon of product families scored by keyword counts;
- nouns: "<category> <most frequent part noun>" plus the next part noun;
- continuity: FALSE on a new-document marker, a confident category change, a different model that dominates
  the current text, or (with an embedder) a very low similarity; TRUE otherwise (the conservative default).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from core.infra.stopping import check_stop, stop_checker
from core.llm.base import LLMStats
from core.methods.chop.cnm import CNM, CnmResult, DecisionResult
from core.product_names import VARIANT_WORDS, models_match, normalise_model  # noqa: F401  (re-exported)

CATEGORIES: dict[str, tuple[str, ...]] = {
    "air conditioner": ("air conditioner", "air conditioning", "aircon", "refrigerant", "cooling mode", "heat pump",
                        "indoor unit", "outdoor unit", "btu", "cool mode", "heat mode"),
    "dehumidifier": ("dehumidifier", "dehumidifying", "dehumidification", "water tank", "humidity level",
                     "continuous drain", "bucket full"),
    # not the bare word "fan": air conditioners and dehumidifiers have a fan speed too
    "fan": ("electric fan", "pedestal fan", "tower fan", "desk fan", "ceiling fan", "oscillation", "oscillate",
            "fan blade", "pedestal", "breeze", "blade guard"),
    "camera": ("camera", "lens", "shutter", "photo", "aperture", "viewfinder", "iso", "exposure", "memory card"),
    "smartphone": ("phone", "smartphone", "sim card", "calls", "contacts", "messages", "galaxy", "android"),
    "tablet": ("tablet", "s pen", "keyboard cover"),
    "smartwatch": ("watch", "wrist", "strap", "heart rate", "workout", "band", "tracker"),
    "television": ("television", "tv", "channel", "hdmi", "antenna"),
    "washing machine": ("washing machine", "washer", "laundry", "spin", "detergent", "drum"),
    "refrigerator": ("refrigerator", "fridge", "freezer", "ice maker", "crisper"),
    "vacuum cleaner": ("vacuum", "suction", "dust bin", "brush roll"),
    "printer": ("printer", "toner", "ink cartridge", "paper tray", "print job"),
    "headphones": ("headphones", "earbuds", "ear tips", "noise cancelling"),
    "router": ("router", "wi-fi network", "ethernet port", "wan port"),
    "microwave oven": ("microwave", "defrost", "turntable"),
}
PART_NOUNS: tuple[str, ...] = (
    "filter", "battery", "charger", "remote", "remote control", "lens", "shutter", "blade", "motor", "timer",
    "display", "screen", "button", "sensor", "tank", "drain", "hose", "nozzle", "cable", "plug", "strap", "card",
    "memory card", "flash", "menu", "mode", "app", "settings", "camera", "speaker", "microphone", "cover", "case",
    "fan", "pipe", "bucket", "grille", "louver", "thermostat", "warranty", "installation", "cleaning", "error code",
    "sim card", "keyboard", "pen", "notification", "alarm", "wallpaper", "bluetooth", "wi-fi", "fingerprint",
)
_MODEL_RE = re.compile(r"\b(?:[A-Z]{1,4}-?){0,2}\d{2,5}[A-Za-z]{0,3}\+?(?:-[A-Z0-9]{1,4})?\b|\b[A-Z][A-Z0-9]*-SERIES\b")
# short models ("S9", "Note 10", "Tab S6") only count after a series word, or error codes like E4 would too.
#: words that say a model follows, in any library
GENERIC_SERIES_WORDS = ("Model", "Series", "Type", "No.")
#: the rule backend's fixed lexicon adds product-family words; the `extract` backend learns its own from the titles
RULE_SERIES_WORDS = ("Galaxy", "Tab", "Note", *GENERIC_SERIES_WORDS)


@lru_cache(maxsize=64)
def _named_model_re(series: tuple[str, ...]) -> re.Pattern[str]:
    words = "|".join(re.escape(w) for w in sorted(set(series), key=lambda w: (-len(w), w)))
    return re.compile(rf"\b(?:{words})\s?([A-Z]{{0,2}}\d{{1,4}}[A-Za-z]{{0,2}}\+?)")
# capitalised or upper case only, as product names write them: "the 225B lite mode" names no variant. Read right
# after a model (never after a blank), its blanks taken whole: a scan through a long run of blanks starts only once
_VARIANT_TAIL = re.compile(r"(?<![ \t])(?:[ \t]++(?:" + "|".join(f"{w.capitalize()}|{w.upper()}" for w in VARIANT_WORDS)
                           + r")\b)+")
_NOT_A_MODEL = re.compile(
    r"^(?:\d+(?:V|W|A|Hz|mm|cm|m|kg|g|mAh|Ah|GB|MB|TB|K|MP|s|h|min|dB|L|ml|px|p|x|fps|th|st|nd|rd)?"
    r"|IP\d+|MP[34]|[HX]26\d|R\d{2,3}A?|LR\d+|CR\d+|AAA?|USB\d*|PM\d+|CO2|HDMI\d*|DDR\d|LTE\d*|[0-9]+G)$",
    re.IGNORECASE,
)
_MANUAL_WORDS = r"(?:user manual|user guide|owner'?s manual|instruction manual|operating instructions)"
# a title: a Markdown H1 naming a manual, a short line "<product> user manual", or a table of contents. One blank
# after the `#`, the rest of the line read by what follows (`#[ \t]+[^\n]*` split a run of blanks in every way:
# quadratic on a `#` followed by many blanks)
_DOC_MARKER = re.compile(
    rf"(?im)^(?:#[ \t][^\n]*\b{_MANUAL_WORDS}\b[^\n]*|[A-Z][^\n]{{2,60}}\b{_MANUAL_WORDS}[ \t]*|"
    r"table of contents[ \t]*)$"
)


def _variant_tail(text: str, end: int) -> str:
    """The variant words right after a model ("S10" + " Lite"), normalised to single spaces."""
    tail = _VARIANT_TAIL.match(text, end)
    return " " + " ".join(tail.group(0).split()) if tail else ""


def model_candidates(text: str, series: tuple[str, ...] = RULE_SERIES_WORDS) -> Counter[str]:
    """Model-like tokens of `text`, counted: letters with two or more digits ("225B", "QX-90"), and short codes
    ("K4", "10") right after one of the `series` words."""
    found: Counter[str] = Counter()
    for m in _MODEL_RE.finditer(text):
        cand = m.group(0) + _variant_tail(text, m.end())
        if not re.search(r"\d", cand) and "SERIES" not in cand:
            continue
        if not re.search(r"[A-Za-z]", cand) or _NOT_A_MODEL.match(cand):
            continue
        found[cand] += 1
    for m in _named_model_re(series).finditer(text):
        cand = m.group(1)
        if cand.isdigit():  # "Note 10" -> "Note10": the number alone means nothing
            cand = re.sub(r"\s+", "", m.group(0))
        cand += _variant_tail(text, m.end())
        if cand not in found and not _NOT_A_MODEL.match(cand):
            found[cand] += 1
    return found


def _keyword_counts(text: str, words: Sequence[str]) -> Counter[str]:
    """How often each word (or its plural) occurs as a whole word. Only words found as a substring are looked
    for with a regex: a window holds few of the lexicon's words, and a regex scan per word was the rule
    backend's whole cost."""
    low = text.lower()
    return Counter({w: n for w in words if w in low and (n := len(_word_pattern(w).findall(low)))})


@lru_cache(maxsize=1024)
def _word_pattern(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(word)}s?\b")


def category_scores(text: str) -> Counter[str]:
    return Counter({cat: total for cat, words in CATEGORIES.items()
                    if (total := sum(_keyword_counts(text, words).values()))})


class RuleCnm:
    """Rule-based CNM extraction and continuity decisions (no LLM; zero LLM calls and tokens)."""

    version = "rules:v3"  # bump when a rule changes: chunk caches are keyed by it (v3: model variants, "S10 Lite")
    label = "rule-based (no model)"

    def __init__(self, embedder: Any = None, min_similarity: float = 0.05, category_similarity: float = 0.3) -> None:
        self.embedder = embedder
        self.min_similarity = min_similarity
        self.category_similarity = category_similarity
        self.stats = LLMStats()
        # the decisions also depend on the embedder's similarities and on both thresholds, so the key names them
        # (chunk runs are keyed by it): a run made with another embedder or threshold is never reused
        defaults = (min_similarity, category_similarity) == (0.05, 0.3)
        self.key = self.version + ("" if embedder is None else f"+{getattr(embedder, 'key', type(embedder).__name__)}")
        self.key += "" if defaults else f":sim={min_similarity}:cat={category_similarity}"

    def extract_one(self, text: str) -> CNM:
        cats = category_scores(text)
        category, cat_score = cats.most_common(1)[0] if cats else (None, 0)
        if cat_score < 2:
            category = None
        models = model_candidates(text)
        model = None
        if models:
            head = model_candidates(text[:300])
            model = (head or models).most_common(1)[0][0]
        parts = [w for w, _ in _keyword_counts(text, PART_NOUNS).most_common() if w != category]
        nouns: list[str] = []
        if parts:
            nouns.append(f"{category} {parts[0]}" if category else parts[0])
            if len(parts) > 1:
                nouns.append(parts[1])
        elif category:
            nouns.append(category)
        evidence = (1 if category else 0) + (1 if model else 0) + (1 if nouns else 0)
        confidence = round(min(0.9, 0.2 + 0.2 * evidence + 0.05 * min(cat_score, 4)), 2)
        return CNM(category=category, nouns=nouns, model=model, confidence=confidence)

    def extract(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
        out = []
        for i, t in enumerate(texts):
            check_stop()
            started = time.perf_counter()
            cnm = self.extract_one(t[:1000])
            out.append(CnmResult(cnm, raw=cnm.model_dump_json(), seconds=time.perf_counter() - started))
            if progress:
                progress(i + 1, len(texts))
        return out

    def decide_one(self, anchor: str, current: str, similarity: float | None = None) -> tuple[bool, str]:
        marker = _DOC_MARKER.search(current)
        if marker:
            return False, f"new-document marker: {marker.group(0).strip()[:60]!r}"
        a_cats, c_cats = category_scores(anchor), category_scores(current)
        if a_cats and c_cats:
            (a_cat, a_n), (c_cat, c_n) = a_cats.most_common(1)[0], c_cats.most_common(1)[0]
            # a phone manual has camera and Wi-Fi sections: a category change alone is a section change unless
            # the texts are also unlike each other (or no embedder is there to tell)
            unlike = similarity is None or similarity < self.category_similarity
            if a_cat != c_cat and a_n >= 3 and c_n >= 5 and c_cats.get(a_cat, 0) == 0 and unlike:
                return False, f"category changes: {a_cat} -> {c_cat}"
        a_models, c_models = model_candidates(anchor), model_candidates(current)
        if c_models:
            c_model, c_n = c_models.most_common(1)[0]
            in_anchor = any(models_match(c_model, m) for m in a_models)
            anchor_named_here = any(models_match(m, c) for m in a_models for c in c_models)
            if a_models and not in_anchor and not anchor_named_here and c_n >= 2:
                return False, f"new model: {a_models.most_common(1)[0][0]} -> {c_model}"
        if similarity is not None and similarity < self.min_similarity:
            return False, f"unrelated text (similarity {similarity:.2f})"
        return True, "no strong evidence of a new document"

    def decide(self, pairs: Sequence[tuple[str, str]],
               progress: Callable[[int, int], None] | None = None) -> list[DecisionResult]:
        sims: list[float | None] = [None] * len(pairs)
        if self.embedder is not None and pairs:
            vecs = np.asarray(self.embedder.embed([t for pair in pairs for t in pair], stop_checker()),
                              dtype=np.float32)
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            sims = [float(vecs[2 * i] @ vecs[2 * i + 1]) for i in range(len(pairs))]
        out = []
        for i, ((anchor, current), sim) in enumerate(zip(pairs, sims)):
            check_stop()
            started = time.perf_counter()
            same, reason = self.decide_one(anchor, current, sim)  # rules cost nothing: read the whole windows
            out.append(DecisionResult(same, reason, raw=f"same={same}: {reason}", seconds=time.perf_counter() - started,
                                      similarity=sim))
            if progress:
                progress(i + 1, len(pairs))
        return out
