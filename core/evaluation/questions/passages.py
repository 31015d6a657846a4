"""Where to ask: passages drawn from across each document, weighted toward sentences with a distinctive fact (a
number, a unit, a model code, a procedure step, a part name), by a seeded generator."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.evaluation.questions.evidence import QuoteIndex
from core.schema.documents import Document
from core.text import sentences

MIN_SENTENCE_CHARS = 25
MAX_SENTENCE_CHARS = 400
SHORT_SENTENCE_CHARS = 60  # a sentence this short (or ending in ':') takes the next one as evidence too



_UNITS = (r"%|°\s?[CF]|mm|cm|km|m|kg|mg|g|lbs?|oz|ml|mL|l|L|V|mV|kV|W|kW|mW|Wh|kWh|mAh|Ah|A|mA|Hz|kHz|MHz|GHz|"
          r"dB|dBu|ms|s|sec|min|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|inch(?:es)?|in|ft|GB|MB|TB|KB|"
          r"bits?|bytes?|px|dpi|fps|rpm|psi|bar|Pa|kPa|BTU|lux|Ω|ohms?|HP")
_FACT = re.compile(
    rf"(?<![\w.])(?:\d+(?:[.,]\d+)*\s?(?:{_UNITS})(?![\w])"  # a number with its unit
    r"|[A-Za-z]*\d[A-Za-z0-9]*(?:[-/.][A-Za-z0-9]+)*"  # a model code or any other token holding a digit
    # an upper-case hyphenated code (SM-G, AC-DC); `[A-Z]{2,}[0-9A-Z]*` split a run of capitals in every way
    # before failing (quadratic on a long one), so two capitals, then the rest of the run taken whole
    r"|[A-Z]{2}[0-9A-Z]*+(?:-[A-Z0-9]+)+)")
_STEP = re.compile(r"^\s*(?:\d{1,2}[.)]\s|step\s+\d|[-•*]\s)", re.IGNORECASE)
_IMPERATIVE = re.compile(r"^\s*(?:press|turn|remove|insert|connect|disconnect|open|close|hold|select|tap|set|clean|"
                         r"replace|switch|push|pull|slide|attach|detach|plug|unplug|check|make sure|do not|never)\b",
                         re.IGNORECASE)
_PART = re.compile(r"\b(?:button|key|switch|knob|port|jack|connector|socket|cable|filter|battery|panel|screen|"
                   r"display|led|lamp|fan|valve|cover|lid|tray|slot|lever|dial|fuse|plug|sensor|remote|tank|hose|"
                   r"pad|input|output|potentiometer|trimmer|jumper|header|menu|icon|indicator|card)s?\b",
                   re.IGNORECASE)


def facts(text: str) -> set[str]:
    """The fact tokens of a sentence (numbers with units, model codes, spec values), case-folded and without
    spaces, so "3 hours" and "3hours" are the same fact."""
    return {re.sub(r"\s+", "", m.group()).casefold() for m in _FACT.finditer(text) if any(c.isdigit() or c.isupper()
                                                                                          for c in m.group())}


def _shape(text: str) -> str:
    """A sentence with its facts masked: two documents holding the same shape with different facts are the
    near-duplicate passages whose difference a chunker must keep apart."""
    return re.sub(r"\s+", " ", _FACT.sub("#", text)).strip().casefold()


@dataclass(frozen=True)
class Passage:
    """One place to ask about: the evidence span (one or two adjacent sentences) and why it was chosen."""

    doc_id: str
    start: int
    end: int
    weight: float
    distinctive: tuple[str, ...] = ()  # facts no other document holds


def _usable(text: str) -> bool:
    """A sentence worth asking about: prose of a reasonable length, not a table row or a page of symbols."""
    if not MIN_SENTENCE_CHARS <= len(text) <= MAX_SENTENCE_CHARS:
        return False
    if text.lstrip().startswith(("#", "|")):  # a Markdown heading or table row
        return False
    letters = sum(c.isalpha() for c in text)
    return letters >= 0.5 * len(text) and len(text.split()) >= 4


def _same_paragraph(text: str, end: int, next_start: int) -> bool:
    """No blank line between two sentences: evidence never spans a heading and the paragraph under it."""
    return text.count("\n", end, next_start) < 2


def sentence_weight(text: str, distinctive: set[str], shared: set[str], sibling_differs: bool) -> float:
    """How much to prefer asking about a sentence: facts no other document holds count most, a sentence whose
    shape another document repeats with other facts counts triple, procedure steps and part names add a little;
    a sentence with none of these stays possible, at a low weight. The sum is squared: a manual has hundreds of
    plain sentences, and a linear weight let them outdraw the few distinctive ones."""
    weight = 0.2 + 3.0 * min(len(distinctive), 2) + 1.0 * min(len(shared), 2)
    if _STEP.search(text) or _IMPERATIVE.search(text):
        weight += 0.5
    if _PART.search(text):
        weight += 0.5
    if sibling_differs and distinctive:
        weight *= 3.0
    return weight * weight


def sentence_spans(doc: Document) -> list[tuple[int, int]]:
    return [(s, e) for s, e in sentences(doc.text)]


def candidate_passages(documents: Sequence[Document]) -> dict[str, list[Passage]]:
    """Every usable evidence span of every document, weighted (`sentence_weight`) against the other documents:
    a fact is distinctive when no other document's sentences hold it."""
    spans = {d.doc_id: sentence_spans(d) for d in documents}
    doc_facts: dict[str, set[str]] = {}
    shapes: dict[str, dict[str, set[str]]] = {}  # shape -> doc_id -> the facts it holds there
    for d in documents:
        found: set[str] = set()
        for s, e in spans[d.doc_id]:
            sent = d.text[s:e]
            f = facts(sent)
            found |= f
            if f:
                shapes.setdefault(_shape(sent), {}).setdefault(d.doc_id, set()).update(f)
        doc_facts[d.doc_id] = found
    holders = Counter(f for fs in doc_facts.values() for f in fs)
    out: dict[str, list[Passage]] = {}
    for d in documents:
        quotes = QuoteIndex(d.text)
        passages: list[Passage] = []
        doc_spans = spans[d.doc_id]
        for i, (s, e) in enumerate(doc_spans):
            sent = d.text[s:e]
            if not _usable(sent):
                continue
            if (len(sent) < SHORT_SENTENCE_CHARS or sent.rstrip().endswith(":")) and i + 1 < len(doc_spans) \
                    and _same_paragraph(d.text, e, doc_spans[i + 1][0]):
                e = doc_spans[i + 1][1]
                if e - s > MAX_SENTENCE_CHARS:
                    continue
            evidence = d.text[s:e]
            if quotes.locate(evidence) != (s, e):  # repeated in the document: no span would be its only place
                continue
            f = facts(evidence)
            distinctive = {x for x in f if holders[x] == 1}
            others = {k: v for k, v in shapes.get(_shape(sent), {}).items() if k != d.doc_id}
            sibling_differs = any(v != facts(sent) for v in others.values())
            passages.append(Passage(d.doc_id, s, e, sentence_weight(evidence, distinctive, f - distinctive,
                                                                    sibling_differs), tuple(sorted(distinctive))))
        out[d.doc_id] = passages
    return out


def _spread(passages: list[Passage], bins: int, rng: random.Random) -> list[Passage]:
    """The passages in the order to ask about them: the document cut into `bins` stretches, each stretch's draw
    by weight (Efraimidis-Spirakis keys, u^(1/w)), then round-robin over the stretches, so the first picks come
    from across the whole document rather than from its most fact-dense page."""
    if not passages:
        return []
    keyed = [(rng.random() ** (1.0 / p.weight), p) for p in passages]
    bins = max(1, min(bins, len(passages)))
    size = math.ceil(len(keyed) / bins)
    stretches = [sorted(keyed[i : i + size], key=lambda kp: -kp[0]) for i in range(0, len(keyed), size)]
    order = list(range(len(stretches)))
    rng.shuffle(order)
    out: list[Passage] = []
    for depth in range(size):
        out.extend(stretches[b][depth][1] for b in order if depth < len(stretches[b]))
    return out


def sample_passages(documents: Sequence[Document], count: int, seed: int = 0) -> list[Passage]:
    """`count` passages (fewer when the documents hold fewer), taken round-robin over the documents (in a seeded
    order) and spread across each; the same documents and seed give the same list."""
    rng = random.Random(seed)
    candidates = candidate_passages(documents)
    per_doc = max(1, math.ceil(count / max(1, len(documents))))
    ordered = {doc_id: _spread(ps, per_doc, rng) for doc_id, ps in candidates.items()}
    doc_order = [d.doc_id for d in documents]
    rng.shuffle(doc_order)
    out: list[Passage] = []
    depth = 0
    while len(out) < count and any(depth < len(v) for v in ordered.values()):
        out.extend(ordered[d][depth] for d in doc_order if depth < len(ordered[d]))
        depth += 1
    return out[:count]
