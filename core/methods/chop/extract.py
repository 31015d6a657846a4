"""A CNM backend with no model that learns each library instead of carrying a lexicon: the `extract` backend.

Before a run, `learned(documents)` reads the whole library once and returns a backend of its own for that run
(the backend the services share is never changed, so sessions chunking different libraries do not mix): which
title words are shared by most titles (a brand, "user manual"), which first-level headings repeat across it
(sections such as "# Manual", not titles), and in how many parts of the library every model-like token and noun
phrase occurs (for TF-IDF). The chunker then asks a view of one document (`for_document`) for its decisions and
tags, so every tag can use the document's own evidence:

- model, ranked: the title line that opens the run (in a joined stream, the new document's heading right after
  the cut), the document title the chunker gives, then the run's model-like tokens (letters and digits, as
  `rules.model_candidates` finds them, variant words kept: "QX9 Lite" is not "QX9") scored by count times inverse
  document frequency over the library, with a bonus for the run's first page; the best of them only if the
  run's first page names it, else the model is unknown (a frequency alone is a guess). A title is split into a model and
  a product type: the words up to its last token with a digit are the model ("QX9", "Pad B 7.0", "Lantern
  2021"); a title with no digit is a model if the document writes its words capitalised in running text (a
  name: "Lantern", "K Fold") or opens with it (a file name "avrdude" over a first page "AVRDUDE"), else it is a
  product type.
- category: the words of that title after the model ("Cordless Drill"), else the product type the first lines
  state ("A program for ...", "(ASN.1) library for ...", "..., which is a library for ..."), else the run's most
  distinctive noun phrase by TF-IDF over the library.
- nouns: the window's two best keyphrases (`NOUN_METHOD`: TF-IDF over noun-phrase candidates, or YAKE).
- continuity: FALSE on a title line (a first-level heading found once in the library, a level-1 PDF outline
  entry, a "... user manual" line or a table of contents; never a numbered chapter such as "1 Introduction", a
  heading naming a part of a document such as "Concept Index", or a `#` line inside a PDF, and never within
  COVER characters of the run's start, where a contents page follows its cover) whose position the window is
  the first to be mostly past; on a tag change (a model named at least twice, first named where the window owns
  the text, never named before in the current run, while the run's own model is not named in the next
  LOOKAHEAD characters; not in a run that a title opened); or on a similarity drop (with an embedder). TRUE
  otherwise. Decisions go in window order: the tag change compares a window with the run it would continue. A
  FALSE decision carries the offset of the cut in the window (`extra["cut"]`), and the chunker extracts the new
  tag from the text after it.

Every tag says where each part came from (`CnmResult.sources`: title, heading, first page, description, keyphrase),
or, for a part it leaves unknown rather than guess, why (a category nothing states; a model only a token's
frequency points to). The only words the extractor knows are listed in
docs/METHODS.md: the stop words shipped with YAKE, a few words naming kinds of documents (`DOCUMENT_WORDS`) and
parts of documents (`SECTION_WORDS`), and the variant words of `rules.py`.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.llm.base import LLMStats
from core.methods.chop.cnm import CNM, CnmResult, DecisionResult
from core.methods.chop.evidence import FREQUENCY, trusted, withheld
from core.methods.chop.rules import (
    GENERIC_SERIES_WORDS,
    VARIANT_WORDS,
    model_candidates,
    models_match,
    normalise_model,
)
from core.text import stopwords

#: words that name a kind of document, not a product: dropped from titles (see docs/METHODS.md)
DOCUMENT_WORDS = frozenset((
    "manual", "manuals", "user", "users", "user's", "guide", "guides", "handbook", "instructions", "instruction",
    "operating", "owner", "owners", "owner's", "reference", "documentation", "quick", "start", "getting",
    "started", "tutorial", "datasheet", "introduction", "overview", "contents", "table",
))
#: words that name a part of a document, not a whole one: a heading holding one ("Concept Index", "Appendix B")
#: is a section, never a new document's title (see docs/METHODS.md)
SECTION_WORDS = frozenset((
    "index", "appendix", "glossary", "bibliography", "references", "acknowledgements", "acknowledgments",
    "preface", "foreword", "copying", "license", "licence", "chapter", "section", "part", "errata",
))
TITLE_PREFIX = "Document title:"
#: how the window's nouns are chosen: "tfidf" (TF-IDF over noun-phrase candidates) or "yake"; chosen on the
#: hand-labelled windows of tests/fixtures/cnm_nouns.json (docs/METHODS.md gives the figures)
NOUN_METHOD = "tfidf"
FIRST_PAGE = 2000  # characters of a run that count as its first page
#: the category's source when nothing states the product type: the inspector shows the part as unknown, and why
UNKNOWN_CATEGORY = "unknown: no title, heading or opening line states the product type"
COVER = 4000  # characters after a run's start in which a title line (a table of contents) belongs to the run
LOOKAHEAD = 15000  # characters after a new model in which the run's own model must not be named again
BLOCK = 20000  # a library of fewer than 3 documents is counted in blocks of this many characters

_HEADING = re.compile(r"(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_MARKER = re.compile(r"(?im)^[ \t]*(?:table of contents|contents|[A-Z][^\n]{2,60}\b(?:user manual|user guide|"
                     r"owner'?s manual|instruction manual|operating instructions))[ \t]*$")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_WORD = re.compile(r"[A-Za-z][a-z]*(?:[-'][A-Za-z]+)*|[A-Z]{2,}")
# a number with a unit written in lower case or mixed case ("20kHz", "40mA", "25mm", "3rd"): a value, not a model
_VALUE = re.compile(r"^\d+(?:[.,]\d+)?(?=[A-Za-z]*[a-z])[A-Za-z]{1,4}$")
# a chapter or appendix number opening a heading: "1 Introduction", "2.3 Naming", "A Copying Information"
_NUMBERED = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.?|[IVX]+\.)\s+\S")
# a product type described in words: "A program for ...", "(ASN.1) library for ...", "... is a library that ..."
# after a closing parenthesis ("(ASN.1) library for"), else only with an article: "Use biometrics to ...", "face,
# fingerprint, or iris to ...", "stabilization: Activate anti-shake to ...", "is designed for ..." and "is in close
# proximity to ..." state no product type
_DESCRIBED = re.compile(r"(?:(?:^|[,;:]\s*|\b(?:is|as)\s+)(?:an?|the)\s+|\)\s*(?:(?:an?|the)\s+)?)"
                        r"((?:[a-z][a-z-]+\s+){0,2}[a-z][a-z-]+)\s+(?:for|that|which|to)\b",
                        re.IGNORECASE | re.MULTILINE)
_COPULA = frozenset(("is", "are", "was", "were", "be", "been"))
_SPLIT = re.compile(r"[\n.;:!?()\[\]{}|,\"*_`>/\\=]+|\s[-–—]\s|\s{2,}")



def _norm_line(line: str) -> str:
    return " ".join(re.findall(r"\w+", line.casefold()))


def models_in(text: str, series: tuple[str, ...] = GENERIC_SERIES_WORDS) -> Counter[str]:
    """`rules.model_candidates` without values ("20kHz", "40mA"); short codes count after the generic series
    words or the library's own (`Library.series`), never after a product word of a fixed list."""
    return Counter({m: n for m, n in model_candidates(text, series).items() if not _VALUE.match(m.split()[0])})


def is_section(heading: str) -> bool:
    """A heading numbered like a chapter or appendix, or naming a part of a document: never a document's title."""
    words = {w.lower() for w in _TOKEN.findall(heading)}
    return bool(_NUMBERED.match(heading.lstrip("# "))) or bool(words & SECTION_WORDS)


def cover_line(text: str) -> str:
    """The first non-empty line of a text: on a PDF's first page, usually the product's name."""
    return next((line.strip() for line in text[:400].splitlines() if line.strip()), "")


def described_type(text: str) -> str | None:
    """The product type a document states in words on its first lines ("A program for ...", "... library for
    ...") or in a sentence ("..., which is a library for ..."): the lower-case words before "for", "that",
    "which" or "to", without stop words and document words."""
    stop = stopwords()
    head = "\n".join(text[:FIRST_PAGE].splitlines()[:12])
    for m in _DESCRIBED.finditer(head):
        if _COPULA & set(m.group(1).lower().split()):  # "the pen is designed for": a clause, not a noun phrase
            continue
        words = [w for w in m.group(1).split() if w.islower() and w not in stop and w not in DOCUMENT_WORDS]
        if words and m.group(1).split()[-1] == words[-1]:
            return " ".join(words)
    return None


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _names_something(words: Sequence[str]) -> bool:
    """Whether model words tell a product apart: a word of two letters or more, or one mixing letters and digits
    ("K4", "B07"); not a bare number ("10", "8.0") with at most single letters."""
    return any(sum(ch.isalpha() for ch in w) >= 2 or (_has_digit(w) and any(ch.isalpha() for ch in w))
               for w in words)


def _series_words(titles: Sequence[str], common: frozenset[str], models: set[str]) -> tuple[str, ...]:
    """The words after which this library writes short model codes: the capitalised words most titles share (a
    brand, a family) and the words before a code inside the titles' models ("Pad" of "Pad B 7.0"), besides the
    generic ones. Learned from the titles, so no product word is written into the extractor."""
    shared = {w for t in titles for w in _TOKEN.findall(t) if w.lower() in common and w[:1].isupper()}
    inside = {w for parts in (m.split() for m in models) for i, w in enumerate(parts)
              if w.isalpha() and len(w) >= 2 and w[:1].isupper() and any(_has_digit(x) for x in parts[i + 1:])}
    words = (shared | inside) - {w for w in shared | inside if w.lower() in DOCUMENT_WORDS}
    return tuple(sorted(set(GENERIC_SERIES_WORDS) | words))


def noun_phrases(text: str, max_words: int = 3) -> Counter[str]:
    """Candidate noun phrases: runs of one to `max_words` alphabetic non-stop words inside a clause, lower case,
    counted. Words with digits (models, values) and one-letter words end a run."""
    stop = stopwords()
    found: Counter[str] = Counter()
    for clause in _SPLIT.split(text):
        run: list[str] = []
        for tok in clause.split() + [""]:
            word = tok.strip("'\"-–—.,").lower()
            if word and word.isalpha() and len(word) > 2 and word not in stop and word not in DOCUMENT_WORDS:
                run.append(word)
                continue
            for n in range(1, max_words + 1):
                for i in range(len(run) - n + 1):
                    found[" ".join(run[i:i + n])] += 1
            run = []
    return found


@dataclass
class Name:
    """What a title line says: a model and a product type, either may be missing."""

    model: str | None = None
    category: str | None = None


@dataclass
class Library:
    """What `prepare` learns from the whole library."""

    units: int = 0
    model_df: Counter[str] = field(default_factory=Counter)  # normalised model -> units naming it
    phrase_df: Counter[str] = field(default_factory=Counter)  # noun phrase -> units holding it
    heading_counts: Counter[str] = field(default_factory=Counter)  # first-level heading text -> occurrences
    common_title_words: frozenset[str] = frozenset()
    models: list[str] = field(default_factory=list)  # every model a title named, longest first
    #: words after which a short code is a model ("K4" after a brand or family word the titles share): the
    #: generic ones and those the library's titles teach
    series: tuple[str, ...] = GENERIC_SERIES_WORDS
    #: most titles name a model: then a title without a digit names one too (near-duplicates differ by model)
    titles_name_models: bool = False
    lower_share: dict[str, float] = field(default_factory=dict)  # title word -> share written in lower case

    def idf(self, df: int) -> float:
        return math.log((1 + self.units) / (1 + df)) + 1.0


def _units(documents: Sequence[Any]) -> list[str]:
    texts = [d.text for d in documents]
    if len(texts) >= 3:
        return texts
    return [t[i:i + BLOCK] for t in texts for i in range(0, max(len(t), 1), BLOCK)]


def _first_level_headings(doc: Any) -> list[tuple[int, str]]:
    """(offset, text) of every first-level heading: Markdown `# ...` lines (not in a PDF, where a `#` line is a
    shell prompt or a comment) and level-1 PDF outline entries."""
    pdf = bool(getattr(doc, "page_starts", None))
    out = [] if pdf else [(m.start(), m.group(2).strip()) for m in _HEADING.finditer(doc.text) if len(m.group(1)) == 1]
    out += [(off, title) for off, level, title in getattr(doc, "outline", []) or [] if level in (0, 1)]
    return sorted(out)


class ExtractCnm:
    """CNM extraction and continuity decisions learned from the library (no model; zero LLM calls)."""

    version = "extract:v5"
    label = "extractor (no model)"

    def __init__(self, embedder: Any = None, min_similarity: float = 0.05, noun_method: str = NOUN_METHOD) -> None:
        self.embedder = embedder
        self.min_similarity = min_similarity
        self.noun_method = noun_method
        self.stats = LLMStats()
        self.library = Library()
        self.key = self.version + ("" if embedder is None else f"+{getattr(embedder, 'key', type(embedder).__name__)}")
        self.key += "" if min_similarity == 0.05 else f":sim={min_similarity}"
        self.key += "" if noun_method == NOUN_METHOD else f":nouns={noun_method}"

    # ---- the library -------------------------------------------------------------------------------------

    def learned(self, documents: Sequence[Any]) -> ExtractCnm:
        """A copy of this backend that knows `documents` (see `learn`); this one is left as it was."""
        other = copy.copy(self)
        other.learn(documents)
        return other

    def learn(self, documents: Sequence[Any]) -> None:
        """Learn the library: document frequencies, shared title words, repeated headings, known models."""
        lib = Library()
        units = _units(documents)
        lib.units = len(units)
        for text in units:
            lib.phrase_df.update(set(noun_phrases(text)))
        for doc in documents:
            lib.heading_counts.update(_norm_line(t) for _, t in _first_level_headings(doc))
        titles = [d.title for d in documents if d.title and not d.segments]
        for doc in documents:
            titles += [t for _, t in _first_level_headings(doc) if lib.heading_counts[_norm_line(t)] == 1]
        title_words = Counter(w for t in titles for w in {x.lower() for x in _TOKEN.findall(t)})
        if len(titles) >= 3:
            # words (never models: no digits) in at least half the titles and at least three: a brand, a series
            lib.common_title_words = frozenset(w for w, n in title_words.items()
                                               if n >= max(3, 0.5 * len(titles)) and not _has_digit(w))
        self.library = lib
        lower: Counter[str] = Counter()
        total: Counter[str] = Counter()
        wanted = {w for w in title_words if w.isalpha()}
        for doc in documents:
            for m in re.finditer(r"(?<=[a-z,] )([A-Za-z]+)", doc.text):
                w = m.group(1)
                if w.lower() in wanted:
                    total[w.lower()] += 1
                    lower[w.lower()] += w.islower()
        lib.lower_share = {w: lower[w] / total[w] for w in total}
        with_digit = [t for t in titles if (n := self.name_of(t)).model and _has_digit(n.model)]
        lib.titles_name_models = len(titles) >= 3 and len(with_digit) >= 0.5 * len(titles)
        models = {n.model for t in titles if (n := self.name_of(t)).model}
        lib.models = sorted(models, key=lambda m: (-len(m), m))
        lib.series = _series_words(titles, lib.common_title_words, models)
        for text in units:
            lib.model_df.update({normalise_model(m) for m in models_in(text, lib.series)})

    # ---- titles ------------------------------------------------------------------------------------------

    def name_of(self, line: str) -> Name:
        """Split a title line into a model and a product type (see the module's doc)."""
        line = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", line.lstrip("# ").strip())
        line = re.split(r"\s[-–—:|]\s", line)[0] if re.search(r"\w\s[-–—:|]\s\w", line) else line
        lib = self.library
        words = [w for w in _TOKEN.findall(line)
                 if w.lower() not in lib.common_title_words and w.lower() not in DOCUMENT_WORDS]
        if not words:
            return Name()
        digits = [i for i, w in enumerate(words) if _has_digit(w) and not re.fullmatch(r"\d{1,2}", w) or
                  re.fullmatch(r"\d+(?:\.\d+)?", w)]
        if digits:
            end = digits[-1] + 1
            while end < len(words) and words[end].lower() in VARIANT_WORDS:
                end += 1
            start = 0
            # words before the model that the library writes in lower case are a product type, not the model
            while start < digits[0] and lib.lower_share.get(words[start].lower(), 0.0) >= 0.5:
                start += 1
            # ... unless dropping them leaves a bare number or letter ("10" of "Orbit 10", "B 7.0" of "Pad B 7.0"):
            # that names no product, so the family word stays
            while start > 0 and not _names_something(words[start:end]):
                start -= 1
            model = " ".join(words[start:end])
            rest = [w for w in words[end:] if w.lower() not in stopwords()] or \
                   [w for w in words[:start] if w.lower() not in stopwords()]
            return Name(model, " ".join(rest) or None)
        content = [w for w in words if w.lower() not in stopwords()]
        if not content:
            return Name()
        named = [w for w in content if lib.lower_share.get(w.lower(), 0.0) < 0.5 and w[0].isupper()]
        capitalised = len(words) <= 3 and all(w[0].isupper() for w in words)
        if named and len(content) <= 3 and len(named) == len(content):
            return Name(" ".join(words) if capitalised else " ".join(content), None)  # "K Fold" keeps its "K"
        if lib.titles_name_models and capitalised:
            return Name(" ".join(words), None)  # a name in a library whose other titles name models
        return Name(None, " ".join(content))

    def title_lines(self, doc: Any) -> list[tuple[int, str]]:
        """(offset, line) of every line that opens a document: a first-level heading found once in the library,
        a level-1 outline entry, a "... user manual" line or a table of contents. Never a section heading: one
        numbered like a chapter or an appendix, or one naming a part of a document ("Concept Index")."""
        lib = self.library
        found = {off: t for off, t in _first_level_headings(doc)
                 if lib.heading_counts[_norm_line(t)] <= 1 and not is_section(t)}
        for m in _MARKER.finditer(doc.text):
            found.setdefault(m.start() + len(m.group(0)) - len(m.group(0).lstrip()), m.group(0).strip())
        return sorted(found.items())

    # ---- tags ----------------------------------------------------------------------------------------------

    def distinctive_models(self, text: str) -> list[tuple[str, float, int]]:
        """(model, score, count) of the model-like tokens of `text`, best first: count x idf, plus a bonus for
        those on the first page."""
        lib = self.library
        counts = models_in(text, lib.series)
        head = models_in(text[:FIRST_PAGE], lib.series)
        scored = []
        for m, n in counts.items():
            df = lib.model_df.get(normalise_model(m), 0)
            idf = lib.idf(df) if lib.units else 1.0
            scored.append((m, (n + 2 * head.get(m, 0)) * idf, n))
        return sorted(scored, key=lambda x: (-x[1], -len(x[0]), x[0]))

    def distinctive_phrases(self, text: str, exclude: str = "", top: int = 5) -> list[str]:
        lib = self.library
        bad = {w.lower() for w in _TOKEN.findall(exclude)}
        scored = []
        for p, n in noun_phrases(text).items():
            if bad & set(p.split()):
                continue
            idf = lib.idf(lib.phrase_df.get(p, 0)) if lib.units else 1.0
            scored.append((n * idf * (1 + 0.5 * (p.count(" "))), p))
        scored.sort(key=lambda x: (-x[0], x[1]))
        out: list[str] = []
        for _, p in scored:
            if not any(p in q or q in p for q in out):
                out.append(p)
            if len(out) == top:
                break
        return out

    def keyphrases(self, text: str, exclude: str = "") -> list[str]:
        if self.noun_method == "yake":
            import yake

            bad = {w.lower() for w in _TOKEN.findall(exclude)}
            kw = yake.KeywordExtractor(lan="en", n=2, top=10, stopwords=set(stopwords()))
            out = []
            for phrase, _ in kw.extract_keywords(text):
                p = phrase.lower()
                if not _has_digit(p) and not bad & set(p.split()) and not set(p.split()) & DOCUMENT_WORDS:
                    out.append(p)
            return out[:2]
        return self.distinctive_phrases(text, exclude, top=2)

    def tag(self, text: str, title: str | None = None, window: str | None = None,
            fallback_title: str | None = None) -> tuple[CNM, dict[str, str]]:
        """The CNM of a run of text (from a cut to the next one) and where each part came from. `title`: the
        document title the chunker gave with the run; `fallback_title`: the document's title for a later run,
        ranked after the run's own opening heading; `window`: the text the nouns are read from (default: the
        run's first page)."""
        sources: dict[str, str] = {}
        name = Name()
        for source, line in (("title", title), ("heading", self._opening_title(text)), ("title", fallback_title)):
            if not line:
                continue
            n = self.name_of(line)
            if n.category and not n.model and _norm_line(line) == _norm_line(cover_line(text)):
                n = Name(n.category, None)  # a name the document opens with ("AVRDUDE"), not a product type
            if n.model and not name.model:
                name.model, sources["model"] = n.model, source
            if n.category and not name.category:
                name.category, sources["category"] = n.category, source
        if not name.model:
            models = self.distinctive_models(text)
            if models:
                on_first_page = models[0][0] in models_in(text[:FIRST_PAGE], self.library.series)
                name.model, sources["model"] = models[0][0], "first page" if on_first_page else FREQUENCY
        if not name.category and (described := described_type(text)):
            name.category, sources["category"] = described, "description"
        for part in ("category", "model"):  # evidence too often wrong on the sets with gold tags: unknown, and why
            if (value := getattr(name, part)) and not trusted(sources[part]):
                setattr(name, part, None)
                sources[part] = withheld(sources[part], value)
        if not name.category and "category" not in sources:
            # a phrase frequent in this manual is one of its subjects, not its product type: on every set with
            # gold tags it never named the category, so the part stays unknown and says why
            sources["category"] = UNKNOWN_CATEGORY
        nouns = self.keyphrases((window or text)[:FIRST_PAGE], exclude=f"{name.model or ''} {name.category or ''}")
        if nouns:
            sources["nouns"] = "keyphrase"
        evidence = {"heading": 0.3, "title": 0.3, "first page": 0.2}
        confidence = 0.2 + evidence.get(sources.get("model", ""), 0.0) + (0.2 if name.category else 0.0)
        cnm = CNM(category=name.category, nouns=nouns, model=name.model, confidence=round(min(confidence, 0.9), 2))
        return cnm, sources

    def _opening_title(self, text: str) -> str | None:
        """The title line at the start of a run (within its first 300 characters), if any."""
        head = text[:300]
        for m in _HEADING.finditer(head):
            if len(m.group(1)) == 1 and self.library.heading_counts[_norm_line(m.group(2))] <= 1 and \
                    not is_section(m.group(2)):
                return m.group(2)
        m = _MARKER.search(head)
        return m.group(0).strip() if m and "content" not in m.group(0).lower() else None

    def tag_query(self, text: str, models: Sequence[str] | None = None) -> tuple[CNM, dict[str, str]]:
        """A question or a loose text: a known model named in it, else its own model-like tokens. Whole names are
        tried first, the longest first, then a name's tail from a word with a digit ("QX9" of "Brandco QX9") when
        no other known model ends the same way ("2020" names neither "Shades 2020" nor "Veils 2020"); never a
        name followed by a variant word ("QX9 Lite" does not name the "QX9"). The known models are `models` (the
        run's tagged models, given by the retrieval policy), else those the library's titles name."""
        low = f" {' '.join(_TOKEN.findall(text.lower()))} "
        known = self.library.models if models is None else sorted(set(models), key=lambda m: (-len(m), m))

        def key(form: str) -> str:
            return " ".join(_TOKEN.findall(form.lower()))

        tails = [(model, key(" ".join(model.split()[i:]))) for model in known
                 for i, w in enumerate(model.split()) if i and _has_digit(w)]
        shared = Counter(k for _, k in tails)
        candidates = [(model, key(model)) for model in known] + [(m, k) for m, k in tails if shared[k] == 1]
        for model, form in candidates:
            at = low.find(f" {form} ")
            if not form or at < 0:
                continue
            tail = low[at + len(form) + 2:].split()
            if tail and tail[0] in VARIANT_WORDS:
                continue
            return CNM(model=model, confidence=0.6), {"model": "library model"}
        return self.tag(text)

    def tag_queries(self, queries: Sequence[str], models: Sequence[str]) -> list[CnmResult]:
        """Questions tagged against the models a run's chunks carry (stateless: any session may ask)."""
        return _results(queries, lambda q: self.tag_query(q, models))

    # ---- the backend interface ------------------------------------------------------------------------------

    def extract(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
        """Tags for loose texts (questions, a hand-started run): a library model named in the text first."""

        def tag(text: str) -> tuple[CNM, dict[str, str]]:
            title, body = _split_title(text)
            return self.tag(body, title=title) if title else self.tag_query(body)

        return _results(texts, tag, progress)

    def decide(self, pairs: Sequence[tuple[str, str]],
               progress: Callable[[int, int], None] | None = None) -> list[DecisionResult]:
        """Decisions for loose pairs of texts (no document around them): tag change or similarity drop."""
        return DocumentView(self, None, []).decide(pairs, progress)

    def for_document(self, doc: Any, spans: Sequence[tuple[int, int]], title: str | None = None) -> DocumentView:
        return DocumentView(self, doc, spans, title)


def _results(texts: Sequence[str], tag: Callable[[str], tuple[CNM, dict[str, str]]],
             progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
    """Each text's tag as a backend answer (the tag's JSON as the raw answer, its seconds, its sources)."""
    out = []
    for i, text in enumerate(texts):
        started = time.perf_counter()
        cnm, sources = tag(text)
        out.append(CnmResult(cnm, raw=cnm.model_dump_json(), seconds=time.perf_counter() - started, sources=sources))
        if progress:
            progress(i + 1, len(texts))
    return out


def _split_title(text: str) -> tuple[str | None, str]:
    if text.startswith(TITLE_PREFIX):
        first, _, rest = text.partition("\n")
        return first[len(TITLE_PREFIX):].strip() or None, rest.lstrip("\n")
    return None, text


class DocumentView:
    """The backend seen from one document: its windows' decisions and its runs' tags."""

    reads_runs = True  # the chunker gives `extract` each run's whole text, from its cut to the next

    def __init__(self, backend: ExtractCnm, doc: Any, spans: Sequence[tuple[int, int]],
                 title: str | None = None) -> None:
        self.backend = backend
        self.doc = doc
        self.title = title
        self.key, self.label, self.stats = backend.key, backend.label, backend.stats
        self.spans = {(doc.text[s:e] if doc is not None else ""): (s, e) for s, e in reversed(spans)}
        self.titles = backend.title_lines(doc) if doc is not None else []
        self._seen: Counter[str] = Counter()
        self._seen_to = -1  # no run started yet
        self._run_start = 0
        self._run_name: str | None = title

    def extract(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
        def tag(text: str) -> tuple[CNM, dict[str, str]]:
            given, body = _split_title(text)
            # the document's title: given with the first run; later runs fall back to it after their own evidence
            return self.backend.tag(body, title=given, window=body[:FIRST_PAGE],
                                    fallback_title=None if given else self.title)

        return _results(texts, tag, progress)

    def _title_between(self, lo: int, hi: int) -> tuple[int, str] | None:
        return next(((off, t) for off, t in self.titles if lo < off <= hi and off > 0), None)

    def _run_models_until(self, end: int) -> Counter[str]:
        """The models named in the current run (from its cut) up to offset `end`, counted as the windows go."""
        if end > self._seen_to:
            found = models_in(self.doc.text[self._seen_to:end], self.backend.library.series)
            self._seen.update(normalise_model(m) for m in found.elements())
            self._seen_to = end
        return self._seen

    def _new_run(self, at: int, title: str | None = None) -> None:
        self._seen, self._seen_to, self._run_start = Counter(), at, at
        self._run_name = self.backend.name_of(title).model if title else None

    def _still_named(self, at: int) -> bool:
        """Whether the text after `at` (LOOKAHEAD characters) still names the current run's model: its title's
        model or the model it has named most. Then a new model there is an accessory or a sibling mentioned in
        passing (a battery "BP-40", a cable "CX-2"), not a new document."""
        ahead = self.doc.text[at:at + LOOKAHEAD]
        if self._run_name:
            forms = [self._run_name] + [w for w in self._run_name.split() if _has_digit(w)]
            if any(re.search(rf"(?<!\w){re.escape(f)}(?!\w)", ahead, re.IGNORECASE) for f in forms):
                return True
        top = [m for m, _ in self._seen.most_common(1)]
        return bool(top) and any(normalise_model(m) in top for m in models_in(ahead, self.backend.library.series))

    def decide_one(self, anchor: str, current: str, similarity: float | None) -> tuple[bool, str, int | None]:
        """(same, reason, cut offset relative to the start of `current`, or None). Decisions are made in the
        order of the windows: the tag-change signal compares a window with the run it would continue."""
        a, c = self.spans.get(anchor), self.spans.get(current)
        if a is None or c is None or self.doc is None:  # loose texts: only their own models to compare
            return self._loose(anchor, current, similarity)
        if self._seen_to < 0:
            self._new_run(a[0], self.title or self.backend._opening_title(anchor))
        mid = (c[0] + c[1]) // 2
        # a title belongs to the first window that is mostly past it
        found = self._title_between((a[0] + a[1]) // 2, mid)
        if found and found[0] - self._run_start < COVER:
            found = None  # a document's contents page after its cover: the same document
        if found:
            off, line = found
            self._new_run(off, line)
            return False, f"new title: {line[:60]!r}", off - c[0]
        # a model named at least twice, first named where this window owns the text (past the previous
        # window's middle, up to its own), and not named before in the current run. Not in a run that a title
        # opened: where documents announce themselves with titles, a model change without one is an accessory
        lo = (a[0] + a[1]) // 2
        region = self.doc.text[lo:c[1]]
        for model, _, n in [] if self._run_name else self.backend.distinctive_models(region):
            first = lo + region.find(model)
            if n < 2 or not lo < first <= mid:
                continue
            seen = self._run_models_until(first)
            if seen and not any(models_match(model, m) or normalise_model(model) == m for m in seen) and \
                    not self._still_named(first + len(model)):
                self._new_run(first)
                return False, f"tag changes: model {model} is new in this run", first - c[0]
            break
        self._run_models_until(mid)
        if similarity is not None and similarity < self.backend.min_similarity:
            self._new_run(c[0])
            return False, f"unrelated text (similarity {similarity:.2f})", 0
        return True, "no strong evidence of a new document", None

    def _loose(self, anchor: str, current: str, similarity: float | None) -> tuple[bool, str, int | None]:
        series = self.backend.library.series
        a_models = {normalise_model(m) for m in models_in(anchor, series)}
        for model, _, n in self.backend.distinctive_models(current):
            if n >= 2 and a_models and normalise_model(model) not in a_models and \
                    not any(models_match(model, m) for m in models_in(anchor, series)):
                return False, f"tag changes: model {model} is new", 0
            break
        if similarity is not None and similarity < self.backend.min_similarity:
            return False, f"unrelated text (similarity {similarity:.2f})", 0
        return True, "no strong evidence of a new document", None

    def decide(self, pairs: Sequence[tuple[str, str]],
               progress: Callable[[int, int], None] | None = None) -> list[DecisionResult]:
        sims: list[float | None] = [None] * len(pairs)
        embedder = self.backend.embedder
        if embedder is not None and pairs:
            vecs = np.asarray(embedder.embed([t for pair in pairs for t in pair]), dtype=np.float32)
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            sims = [float(vecs[2 * i] @ vecs[2 * i + 1]) for i in range(len(pairs))]
        out = []
        for i, ((anchor, current), sim) in enumerate(zip(pairs, sims)):
            started = time.perf_counter()
            same, reason, cut = self.decide_one(anchor, current, sim)
            extra: dict[str, Any] = {"similarity": sim}
            if cut is not None:
                extra["cut"] = cut
            out.append(DecisionResult(same, reason, raw=f"same={same}: {reason}", seconds=time.perf_counter() - started,
                                      extra=extra))
            if progress:
                progress(i + 1, len(pairs))
        return out
