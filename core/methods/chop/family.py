"""One correction fixes the family: what a person's fix of one manual's CNM tag teaches about the other manuals.

CHOP is for many near-duplicate manuals in one store: they share a product type and differ by model. So a
correction of one manual (an *example*: its category and / or model, given in the CNM inspector or in a
`--cnm-examples` file) says two things about the rest of the library:

- **category**: the corrected category is the family's. Every other manual takes it, except one whose own title
  or heading states a product type that differs from what the corrected manual's title stated (a family may
  hold a drill and a saw whose titles say so). With several examples, a manual follows the example whose title
  shares the most words with its own title; between titles as near, the category whose words its own text uses
  most, and none when it uses none of them (so the order of the examples never matters).
  A corrected category can also be what sets its manual apart rather than the family's type (one tablet among
  phones): when the corrected manual names it at least `DISTINCT` times as often as the library's median manual
  (per character), it goes only to the manuals that name it at least the geometric mean of those two rates, and
  the others keep their category (`held_back` lists them, and why). Between titles as near, such a category that
  reaches the manual wins over one that does not set its manual apart.
- **model**: when the corrected model is a run of words of the corrected manual's title, the words around it are
  the family's title template ("Acme | Zephyr 6 Mini | User Guide": the brand before, the kind of document
  after). Every manual whose title has the same words before its model takes the words up to where the
  template's following words begin (or up to words naming a kind of document) as its model: the family word
  kept or dropped, the variant words kept, as the correction showed; capitalised words after the model's last
  word with a digit are that manual's own product type ("C2 | Battery Charger"). A manual whose title does not
  match the template keeps its model. A corrected model that is not in its manual's title teaches nothing.

Nothing here knows a product word: the lessons come from the example and the titles. Every proposed change says
where it came from (`Change.why`, and the run's `cnm_sources`), and nothing is applied until a person (or the
command line) applies the edits `propose` returns.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.methods.chop.cnm import CNM, cnm_sources
from core.methods.chop.edits import CnmEdit, apply_edits
from core.methods.chop.evidence import BY_HAND, UNKNOWN
from core.methods.chop.rules import VARIANT_WORDS
from core.schema.chunks import Chunk
from core.schema.documents import Document, documents_by_id

#: the parts of a tag an example may give
PARTS = ("category", "model")
#: words naming a kind of document: a title may end with any of them after its model (see docs/METHODS.md)
DOCUMENT_TAIL = frozenset(("manual", "manuals", "user", "users", "user's", "guide", "handbook", "instructions",
                           "owner's", "owners", "reference", "quick", "start", "datasheet", "documentation"))
_WORD = re.compile(r"\S+")
_TYPE_WORD = re.compile(r"[A-Za-z][A-Za-z-]+")
_TITLE_SOURCES = ("title", "heading")
#: how many times as often as the library's median manual a corrected manual must name its category for the
#: category to set it apart: between the highest ratio on a one-type family (1.99, eurorack's Rings) and the
#: lowest of a type that sets a manual apart (4.5, the sample's fans; emanual_galaxy's tablets 6, its band 22)
DISTINCT = 3.0


@dataclass(frozen=True)
class TagRun:
    """Chunks sharing one tag within one manual (not a chunker's run, `core.schema.runs`): a run (from a cut to the
    next) or, where a run of a joined stream crosses into the next manual, its part in each manual."""
    start: int  # index of its first chunk
    doc_id: str  # the manual: the document, or in a joined stream the source document under the chunks' midpoints
    title: str
    cnm: CNM
    sources: Mapping[str, str]
    split: bool = False  # starts inside a run: teaching it a tag of its own cuts there (a FALSE decision)


@dataclass(frozen=True)
class Change:
    """One part of one run's tag that an example changes: shown to a person before it is applied."""
    doc_id: str
    chunk_id: str  # the run's first chunk
    part: str  # "category" or "model"
    before: str
    after: str
    why: str


def runs_of(chunks: Sequence[Chunk], documents: Sequence[Document]) -> list[TagRun]:
    """Every run of a CHOP chunk list, in order, cut also where a manual begins inside a run, each with its manual
    (by the chunk's midpoint, as the gold tags are read) and that manual's title."""
    docs = documents_by_id(documents)
    out: list[TagRun] = []
    previous = None
    for i, c in enumerate(chunks):
        manual = manual_of(c, docs)
        starts = c.meta.get("continuity") is not True
        if (starts or manual != previous) and (cnm := CNM.of(c)) is not None:
            doc = docs.get(c.doc_id)
            seg = next((s for s in doc.segments if s.doc_id == manual), None) if doc is not None else None
            title = seg.title if seg else (doc.title if doc else "")
            out.append(TagRun(i, manual, title or "", cnm, cnm_sources(c), split=not starts))
        previous = manual
    return out


def _words(title: str) -> list[str]:
    return _WORD.findall(title)


def _fold(words: Sequence[str]) -> list[str]:
    return [w.casefold().strip(",;:") for w in words]


def _find(seq: Sequence[str], part: Sequence[str]) -> int | None:
    n = len(part)
    return next((i for i in range(len(seq) - n + 1) if list(seq[i:i + n]) == list(part)), None) if n else None


@dataclass(frozen=True)
class ModelTemplate:
    """The title words around the corrected model: `before` exactly, then the model, then `after` (or any words
    naming a kind of document)."""
    before: tuple[str, ...]
    after: tuple[str, ...]
    source: str  # the example's manual
    #: the corrected model itself ends with words a title's product type would be read from ("Orbit 3 Dock"):
    #: then no title's words are read as a type
    typed_tail: bool = False

    @classmethod
    def learn(cls, title: str, model: str, source: str) -> ModelTemplate | None:
        folded = _fold(_words(title))
        at = _find(folded, _fold(_words(model)))
        if at is None:
            return None
        end = at + len(_words(model))
        named = _words(model)
        typed_tail = len(named) > 1 and _type_word(named[-1]) and any(_digit(w) for w in named[:-1])
        return cls(tuple(folded[:at]), tuple(folded[end:]), source, typed_tail)

    def _end(self, folded: Sequence[str]) -> int:
        """Where the model of a title ends: where the longest leading part of `after` begins (at least one word
        past `before`), else before the words naming a kind of document and the dashes at the title's end."""
        start = len(self.before) + 1
        for n in range(len(self.after), 0, -1):
            at = _find(folded[start:], self.after[:n])
            if at is not None:
                return start + at
        end = len(folded)
        while end > start and (folded[end - 1] in DOCUMENT_TAIL or not any(ch.isalnum() for ch in folded[end - 1])):
            end -= 1
        return end

    def read(self, title: str) -> tuple[str | None, str | None]:
        """The model and the product type `title` names by this template: the words between the template's
        `before` and `after`, of which capitalised words after the last word with a digit that are no variant
        words ("C2 | Battery Charger") are the type, when the corrected model itself ended with no such words."""
        words, folded = _words(title), _fold(_words(title))
        if tuple(folded[:len(self.before)]) != self.before:
            return None, None
        end = self._end(folded)
        middle = [w.strip(" -–—:|") for w in words[len(self.before):end]]
        middle = [w for w in middle if w]
        typed: list[str] = []
        if not self.typed_tail:
            while len(middle) > 1 and _type_word(middle[-1]) and any(_digit(w) for w in middle[:-1]):
                typed.insert(0, middle.pop())
        return (" ".join(middle) or None), (" ".join(typed) or None)


def _digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _type_word(word: str) -> bool:
    return word[:1].isupper() and word.replace("-", "").isalpha() and word.casefold() not in VARIANT_WORDS


@dataclass(frozen=True)
class Reach:
    """Where one corrected category goes: everywhere, or, when it sets its manual apart (`distinct`), only to the
    manuals that name it at least `floor` times per 100,000 characters."""
    source: str  # the corrected manual
    category: str
    rates: Mapping[str, float]  # manual -> how often it names the category, per 100,000 characters
    distinct: bool
    floor: float

    def reaches(self, manual: str) -> bool:
        return not self.distinct or self.rates.get(manual, 0.0) >= self.floor

    def why_not(self, manual: str) -> str:
        median, here = statistics.median(self.rates.values()), self.rates.get(manual, 0.0)
        return (f"not carried: \"{self.category}\" sets {self.source} apart ({self.rates[self.source]:.1f} mentions "
                f"per 100k characters there, {median:.1f} in the median manual, {here:.1f} here)")


@dataclass(frozen=True)
class Held:
    """A manual a corrected category is not carried to, and why: shown beside the proposed changes."""
    doc_id: str
    category: str
    why: str


def reach(source: str, category: str, texts: Mapping[str, str], vocab: dict[str, Counter[str]]) -> Reach:
    """How far `source`'s corrected `category` goes in the library whose manuals' texts are `texts` (`vocab`:
    their word counts, filled as needed)."""
    rates = {}
    for manual, text in texts.items():
        if manual not in vocab:
            vocab[manual] = word_counts(text)
        rates[manual] = 1e5 * _mentions(category, vocab[manual]) / max(len(text), 1)
    own = rates.get(source, 0.0)
    median = statistics.median(rates.values()) if rates else 0.0
    distinct = len(rates) >= 3 and own > 0 and own >= DISTINCT * median
    floor = math.sqrt(own * max(median, own / 100)) if distinct else 0.0
    return Reach(source, category, rates, distinct, floor)


def _name_head(model: str) -> list[str]:
    """A model's words up to its last word with a digit: "Pad S6" of "Pad S6 Dock", not the type after a code."""
    words = _words(model)
    last = max((i for i, w in enumerate(words) if _digit(w)), default=-1)
    return words[:last + 1]


def _overlap(a: str, b: str) -> int:
    return len(set(_fold(_words(a))) & set(_fold(_words(b))))


def _title_category(run: TagRun) -> str | None:
    return run.cnm.category if run.sources.get("category") in _TITLE_SOURCES else None


def propose(chunks: Sequence[Chunk], documents: Sequence[Document],
            examples: Mapping[str, Mapping[str, str | None]]) -> tuple[list[CnmEdit], list[Change]]:
    """The edits that carry `examples` ({manual id: {"category": ..., "model": ...}}, either part may be absent)
    to every run of the library, and the changes they make, part by part. The example manuals' own runs take
    the example as it is; the others follow the lessons in the module's docstring. Raises KeyError for an
    example naming no manual of the run."""
    runs = runs_of(chunks, documents)
    titles = {r.doc_id: r.title for r in runs}
    missing = sorted(set(examples) - set(titles))
    if missing:
        raise KeyError(f"no manual {', '.join(missing)} in this run")
    family = _Family.of(runs, documents, examples)
    templates = [t for d, ex in examples.items() if ex.get("model")
                 and (t := ModelTemplate.learn(titles[d], str(ex["model"]), d)) is not None]
    edits: list[CnmEdit] = []
    changes: list[Change] = []
    for run in runs:
        new = {"category": run.cnm.category, "model": run.cnm.model}
        why: dict[str, str] = {}
        own = examples.get(run.doc_id)
        for part in PARTS:
            if own is not None and own.get(part):
                new[part], why[part] = str(own[part]), BY_HAND
        nearest = max(templates, key=lambda t: _overlap(titles[t.source], run.title), default=None)
        model, typed = nearest.read(run.title) if nearest is not None else (None, None)
        if own is None or not own.get("category"):
            family.category_for(run, typed, model, new, why)
        if (own is None or not own.get("model")) and nearest is not None and model:
            new["model"], why["model"] = model, f"family: the title template of {nearest.source}'s correction"
        changed = [p for p in PARTS if new[p] != getattr(run.cnm, p)]
        if not changed:
            continue
        chunk_id = chunks[run.start].chunk_id
        for part in changed:
            changes.append(Change(run.doc_id, chunk_id, part, getattr(run.cnm, part) or "", new[part] or "", why[part]))
        sources = {**run.sources, **{p: why[p] for p in changed}}
        cnm = run.cnm.model_copy(update={"category": new["category"], "model": new["model"],
                                         "confidence": max(run.cnm.confidence, 0.8)})
        edits.append(CnmEdit(chunk_id, cnm=cnm.model_dump(), continuity=False if run.split else None,
                             sources=sources))
    return edits, changes


def _mentions(category: str, words: Counter[str]) -> int:
    """How often a manual whose words are counted in `words` names the product type `category`: the most frequent
    of its words, a closed compound counted also by its head ("board" of "keyboard": both parts four letters or
    more, so "light" never stands for "flight")."""
    best = 0
    for w in {w.casefold() for w in _TYPE_WORD.findall(category)}:
        forms = {w} | {w[i:] for i in range(4, len(w) - 3)}
        best = max(best, max(words.get(t, 0) for t in forms))
    return best


def word_counts(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _TYPE_WORD.findall(text))


def manual_texts(documents: Sequence[Document]) -> dict[str, str]:
    """Every manual's text by id: a document's, or each source document's part of a stream."""
    out: dict[str, str] = {}
    for d in documents:
        for seg in d.segments:
            out[seg.doc_id] = d.text[seg.start:seg.end]
        if not d.segments:
            out[d.doc_id] = d.text
    return out


@dataclass
class _Family:
    """What a proposal knows of the library beside its runs: each manual's first run (what its title said), its
    title, its text and word counts (counted when first needed), and the corrected categories with their reach."""
    first: Mapping[str, TagRun]
    titles: Mapping[str, str]
    texts: Mapping[str, str]
    vocab: dict[str, Counter[str]]
    categories: Sequence[tuple[str, str]]
    reaches: Mapping[str, Reach]

    @classmethod
    def of(cls, runs: Sequence[TagRun], documents: Sequence[Document],
           examples: Mapping[str, Mapping[str, str | None]]) -> _Family:
        texts = manual_texts(documents)
        vocab: dict[str, Counter[str]] = {}
        categories = [(d, str(ex["category"])) for d, ex in examples.items() if ex.get("category")]
        return cls({r.doc_id: r for r in reversed(runs)}, {r.doc_id: r.title for r in runs}, texts, vocab,
                   categories, {d: reach(d, c, texts, vocab) for d, c in categories})

    def counts(self, manual: str) -> Counter[str]:
        if manual not in self.vocab:
            self.vocab[manual] = word_counts(self.texts.get(manual, ""))
        return self.vocab[manual]

    def category_for(self, run: TagRun, typed: str | None, named: str | None, new: dict[str, str | None],
                     why: dict[str, str]) -> None:
        """The family's category for `run`, from the example whose title is nearest its own, unless the run's
        manual states a product type of its own in its title that the example's manual did not: `typed`, read
        from the title by the model template, or the category the backend read from the manual's title or
        heading, unless the template's model for this title (`named`) holds its words before its code ("Pad" of
        "Pad S6": part of the name, as the correction shows, so it is taken off). Only where the example's
        category reaches."""
        stated = typed or _title_category(self.first[run.doc_id])
        if stated and not typed and named and set(_fold(_words(stated))) <= set(_fold(_name_head(named))):
            stated = None
            if run.cnm.category and run.cnm.category.casefold() == (_title_category(run) or "").casefold():
                new["category"], why["category"] = None, f"{UNKNOWN}: a word of the model (the correction's reading)"
        categories = [(d, c) for d, c in self.categories if self.reaches[d].reaches(run.doc_id)]
        if not categories:
            return
        overlap = {d: _overlap(self.titles[d], run.title) for d, _ in categories}
        nearest = [(d, c) for d, c in categories if overlap[d] == max(overlap.values())]
        distinct = {c.casefold() for d, c in nearest if self.reaches[d].distinct}
        if len({c.casefold() for _, c in nearest}) > 1 and len(distinct) == 1:
            nearest = [(d, c) for d, c in nearest if self.reaches[d].distinct]  # a type that sets this one apart
        if len({c.casefold() for _, c in nearest}) > 1:
            # titles as near as each other: the category whose words the manual itself uses most ("board" of
            # "keyboard" in a keyboard's manual), and none when it uses none of them
            counts = [(_mentions(c, self.counts(run.doc_id)), d, c) for d, c in nearest]
            top = max(n for n, _, _ in counts)
            if top == 0 or len({c.casefold() for n, _, c in counts if n == top}) > 1:
                return
            nearest = [(d, c) for n, d, c in counts if n == top]
        source, category = nearest[0]
        example_stated = _title_category(self.first[source])
        if stated and stated.casefold() != (example_stated or "").casefold():
            if typed and run.cnm.category != typed:
                new["category"], why["category"] = typed, "its own title (the family's title template)"
            return
        new["category"], why["category"] = category, f"family: {source}'s correction"


def held_back(documents: Sequence[Document], examples: Mapping[str, Mapping[str, str | None]]) -> list[Held]:
    """The manuals (other than the examples) that no corrected category is carried to, because each sets its own
    manual apart and they rarely name it (see `Reach`), with the first example's reason."""
    texts = manual_texts(documents)
    vocab: dict[str, Counter[str]] = {}
    reaches = [reach(d, str(ex["category"]), texts, vocab) for d, ex in examples.items()
               if ex.get("category") and d in texts]
    if not reaches:
        return []
    return [Held(m, reaches[0].category, reaches[0].why_not(m)) for m in texts
            if m not in examples and not any(r.reaches(m) for r in reaches)]


def teach(chunks: Sequence[Chunk], documents: Sequence[Document],
          examples: Mapping[str, Mapping[str, str | None]]) -> tuple[list[Chunk], list[Change]]:
    """New chunks with `examples` carried to the whole library (`propose`, then applied), and the changes made."""
    edits, changes = propose(chunks, documents, examples)
    taught, _ = apply_edits(chunks, edits, backend=None)  # no decision flips: the backend is never asked
    return taught, changes


def manual_of(chunk: Chunk, documents: Mapping[str, Document]) -> str:
    """The manual a chunk belongs to: its document, or in a stream the source document under its midpoint (as the
    gold tags are read: `core.methods.chop.accuracy.gold_of`)."""
    doc = documents.get(chunk.doc_id)
    seg = doc.segment_at((chunk.start + chunk.end) // 2) if doc is not None else None
    return seg.doc_id if seg else chunk.doc_id


def hand_examples(chunks: Sequence[Chunk], documents: Sequence[Document]) -> dict[str, dict[str, str]]:
    """The corrections a person typed in the inspector, as examples: for each manual with a run whose category or
    model was corrected by hand, the first such run's parts that were."""
    docs = documents_by_id(documents)
    out: dict[str, dict[str, str]] = {}
    for c in chunks:
        sources = cnm_sources(c)
        cnm = CNM.of(c)
        manual = manual_of(c, docs)
        if cnm is None or manual in out:
            continue
        parts = {p: v for p in PARTS if sources.get(p) == BY_HAND and (v := getattr(cnm, p))}
        if parts:
            out[manual] = parts
    return out
