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
  document frequency over the library, with a bonus for the run's first page; neither the first page nor a
  frequency is trusted enough to be given (`evidence.CONFIDENCE`), so such a model is unknown, saying what it
  read. The document's title is the one given, unless that is only its file's name and the text writes a heading
  on its first page (`written_title`). A title's words keep their hyphen-joined parts ("L412RB-P"); the words most
  titles share are dropped (a brand, "user manual") unless the texts write them with their models (a family's
  name, "Orbit K5": `Library.family_words`) or the model is a bare number without them. A title is split into a
  model and a product type: the words up to its last token with a digit are the model ("QX9", "Pad B 7.0", "Lantern
  2021"); a title with no digit is a model if the document writes its words capitalised in running text (a
  name: "Lantern", "K Fold") or opens with it (a file name "avrdude" over a first page "AVRDUDE"), else it is a
  product type.
- category: the words of that title after the model ("Cordless Drill"), else the product type the first lines
  state ("A program for ...", "(ASN.1) library for ...", "..., which is a library for ..."), else the type most
  of the library's manuals state right after their own model ("the Orbit K5 flight controller"), else unknown.
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

Every tag says where each part came from (`CnmResult.sources`: title, heading, description, keyphrase) and so how
far it can be trusted (`core.methods.chop.evidence`), or, for a part it leaves unknown rather than guess, why (a
category nothing states; a model only weak evidence names). What it reads in a text is in `reading.py`, in a
library's titles in `titles.py`, its view of one document (decisions in window order) in `document_view.py`. The
only words the extractor knows are listed in docs/METHODS.md: the stop words shipped with YAKE, a few words
naming kinds of documents (`DOCUMENT_WORDS`) and parts of documents (`SECTION_WORDS`), and the variant words of
`rules.py`.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from core.infra.stopping import check_stop
from core.llm.base import LLMStats
from core.methods.chop.cnm import CNM, CnmResult, DecisionResult
from core.methods.chop.document_view import DocumentView, split_title, tag_results
from core.methods.chop.evidence import FREQUENCY, trusted, withheld
from core.methods.chop.reading import (
    DOCUMENT_WORDS,
    FIRST_PAGE,
    NAME_TOKEN,
    TITLE_MARKER,
    TOKEN,
    Library,
    Name,
    cover_line,
    described_type,
    has_digit,
    hash_headings,
    is_section,
    models_in,
    names_something,
    norm_line,
    noun_phrases,
    series_words,
)
from core.methods.chop.rules import (
    VARIANT_WORDS,
    normalise_model,
)
from core.methods.chop.speech import noun_headed
from core.methods.chop.titles import (
    family_words,
    first_level_headings,
    last_index,
    stated_type,
    titled_texts,
    with_family_word,
    without_variants,
    written_title,
)
from core.text import stopwords

#: how the window's nouns are chosen: "tfidf" (TF-IDF over noun-phrase candidates) or "yake"; chosen on the
#: hand-labelled windows of tests/fixtures/cnm_nouns.json (docs/METHODS.md gives the figures)
NOUN_METHOD = "tfidf"
#: the category's source when nothing states the product type: the inspector shows the part as unknown, and why
UNKNOWN_CATEGORY = "unknown: no title, heading or opening line states the product type"
BLOCK = 20000  # a library of fewer than 3 documents is counted in blocks of this many characters


def _typed(model: str | None, words: str) -> Name:
    """A model and the title words where its product type stands: the category when they make a noun phrase
    ("Flight Controller"), else kept aside to say why the category is unknown ("Optimized")."""
    if not words:
        return Name(model, None)
    return Name(model, words) if noun_headed(words) else Name(model, None, not_a_type=words)


# a word of running text (after a lower-case word or a comma): how the library writes a title's words
_AFTER_LOWER = re.compile(r"(?<=[a-z,] )([A-Za-z]+)")
# a dash, colon or bar between blanks in a title: what follows is a subtitle ("Orbit K5 - Quick Start")
_TITLE_BREAK = re.compile(r"\s[-–—:|]\s")
_TITLE_BREAK_BETWEEN = re.compile(r"\w\s[-–—:|]\s\w")
_OPENING = re.compile(r"[(\[]")
_CLOSING = {"(": ")", "[": "]"}


def without_brackets(line: str) -> str:
    r"""`line` with each bracketed aside ("(rev. 2)", "[draft]") made one blank, from an opening bracket to the
    first closing one after it, as `re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", line)` does. That pattern scanned to
    the line's end from every unclosed bracket (quadratic on a title of "("); here each closing bracket is looked
    for once, and an opening one with none after it leaves every later one of its kind as it is."""
    parts: list[str] = []
    done = 0
    unclosed: set[str] = set()
    for m in _OPENING.finditer(line):
        opening = m.group()
        if m.start() < done or opening in unclosed:
            continue
        close = line.find(_CLOSING[opening], m.start() + 1)
        if close < 0:
            unclosed.add(opening)
            continue
        parts.append(line[done:m.start()] + " ")
        done = close + 1
    return "".join(parts) + line[done:]


def _units(documents: Sequence[Any]) -> list[str]:
    texts = [d.text for d in documents]
    if len(texts) >= 3:
        return texts
    return [t[i:i + BLOCK] for t in texts for i in range(0, max(len(t), 1), BLOCK)]


class ExtractCnm:
    """CNM extraction and continuity decisions learned from the library (no model; zero LLM calls)."""

    version = "extract:v7"
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
        for text in units:  # every loop over the library ends at its next step once the run is stopped
            check_stop()
            lib.phrase_df.update(set(noun_phrases(text)))
        for doc in documents:
            check_stop()
            lib.heading_counts.update(norm_line(t) for _, t in first_level_headings(doc))
        titles = [t for d in documents if not d.segments and (t := written_title(d))]
        for doc in documents:
            titles += [t for _, t in first_level_headings(doc) if lib.heading_counts[norm_line(t)] == 1]
        title_words = Counter(w for t in titles for w in {x.lower() for x in TOKEN.findall(t)})
        if len(titles) >= 3:
            # words (never models: no digits) in at least half the titles and at least three: a brand, a series
            lib.common_title_words = frozenset(w for w, n in title_words.items()
                                               if n >= max(3, 0.5 * len(titles)) and not has_digit(w))
        self.library = lib
        lower: Counter[str] = Counter()
        total: Counter[str] = Counter()
        wanted = {w for w in title_words if w.isalpha()}
        for doc in documents:
            check_stop()
            for m in _AFTER_LOWER.finditer(doc.text):
                w = m.group(1)
                if w.lower() in wanted:
                    total[w.lower()] += 1
                    lower[w.lower()] += w.islower()
        lib.lower_share = {w: lower[w] / total[w] for w in total}
        with_digit = [t for t in titles if (n := self.name_of(t)).model and has_digit(n.model)]
        lib.titles_name_models = len(titles) >= 3 and len(with_digit) >= 0.5 * len(titles)
        manuals = titled_texts(documents, lib.heading_counts)
        lib.family_words = family_words(self, manuals)
        # a shared word some model cannot do without ("Zephyr 7": "7" names nothing) is the family's name in every
        # model it is written before ("Zephyr V5 nano", not "V5 nano" beside "Zephyr 7")
        lib.family_words |= {first.lower() for t in titles if (model := self.name_of(t).model)
                             and (first := model.split()[0]).lower() in lib.common_title_words}
        lib.stated_type = stated_type(self, manuals)
        described = [d for _, body in manuals if (d := described_type(body))]
        lib.manuals = len(manuals)
        lib.described_heads = Counter(d.split()[-1] for d in described)
        named_types = Counter(n.category for t in titles if (n := self.name_of(t)).model and n.category)
        lib.types = tuple(t for t, _ in named_types.most_common()) + ((lib.stated_type,) if lib.stated_type else ())
        models = {n.model for t in titles if (n := self.name_of(t)).model}
        lib.models = sorted(models, key=lambda m: (-len(m), m))
        lib.series = series_words(titles, lib.common_title_words, models)
        for text in units:
            check_stop()
            lib.model_df.update({normalise_model(m) for m in models_in(text, lib.series)})

    # ---- titles ------------------------------------------------------------------------------------------

    def name_of(self, line: str) -> Name:
        """Split a title line into a model and a product type (see the module's doc)."""
        line = without_brackets(line.lstrip("# ").strip())
        line = _TITLE_BREAK.split(line)[0] if _TITLE_BREAK_BETWEEN.search(line) else line
        lib = self.library
        # hyphen-joined parts stay one word: "L412RB-P" and "X6-RT" are other products than "L412RB" and "X6"
        spelled = [w for w in NAME_TOKEN.findall(line) if w.lower() not in DOCUMENT_WORDS]
        # the words most titles share are a brand or a document word, dropped, unless the texts write them with
        # their models: a family's name ("Orbit K5"), part of the model
        words = [w for w in spelled if w.lower() not in lib.common_title_words or w.lower() in lib.family_words]
        if not words:
            return Name()
        digits = [i for i, w in enumerate(words) if has_digit(w) and not re.fullmatch(r"\d{1,2}", w) or
                  re.fullmatch(r"\d+(?:\.\d+)?", w)]
        if digits:
            end = digits[-1] + 1
            # variant words stay attached, and so does a lone capital letter ("U575ZI Q", written "U575ZI-Q" too)
            while end < len(words) and (words[end].lower() in VARIANT_WORDS or re.fullmatch(r"[A-Z]", words[end])):
                end += 1
            start = 0
            # words before the model that the library writes in lower case are a product type, not the model
            while start < digits[0] and lib.lower_share.get(words[start].lower(), 0.0) >= 0.5:
                start += 1
            # ... unless dropping them leaves a bare number or letter ("10" of "Orbit 10", "B 7.0" of "Pad B 7.0"):
            # that names no product, so the family word stays
            while start > 0 and not names_something(without_variants(words[start:end])):
                start -= 1
            # a shared word is dropped from a model's edges only, never from inside it: "Acme Zephyr 6C" is a name,
            # "Acme 6C" is none
            past = last_index(spelled, words[end - 1]) + 1  # the title word after the model
            model = " ".join(spelled[spelled.index(words[start]):past])
            if not names_something(without_variants(words[start:end])):
                model = with_family_word(spelled, words[start], model)
            # the words after the model are its product type, shared by most titles or not ("Zephyr 6C Flight
            # Controller" in a family of flight controllers states the family's type)
            after = spelled[past:]
            rest = [w for w in after if w.lower() not in stopwords()] or \
                   [w for w in words[:start] if w.lower() not in stopwords()]
            return _typed(model, " ".join(rest))
        content = [w for w in words if w.lower() not in stopwords()]
        if not content:
            return Name()
        last = spelled[-1]
        typed = next((t for t in lib.types if last.lower() == t.split()[-1].lower()), None)
        if typed and (model_words := [w for w in words if w is not last]):
            # "Zephyr Orange Controller" where the other titles name a "Flight Controller": a model and its type
            return Name(" ".join(model_words), typed)
        named = [w for w in content if lib.lower_share.get(w.lower(), 0.0) < 0.5 and w[0].isupper()]
        capitalised = len(words) <= 3 and all(w[0].isupper() for w in words)
        if named and len(content) <= 3 and len(named) == len(content):
            return Name(" ".join(words) if capitalised else " ".join(content), None)  # "K Fold" keeps its "K"
        if lib.titles_name_models and capitalised:
            return Name(" ".join(words), None)  # a name in a library whose other titles name models
        return _typed(None, " ".join(content))

    def title_lines(self, doc: Any) -> list[tuple[int, str]]:
        """(offset, line) of every line that opens a document: a first-level heading found once in the library,
        a level-1 outline entry, a "... user manual" line or a table of contents. Never a section heading: one
        numbered like a chapter or an appendix, or one naming a part of a document ("Concept Index")."""
        lib = self.library
        found = {off: t for off, t in first_level_headings(doc)
                 if lib.heading_counts[norm_line(t)] <= 1 and not is_section(t)}
        for m in TITLE_MARKER.finditer(doc.text):
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
        bad = {w.lower() for w in TOKEN.findall(exclude)}
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

            bad = {w.lower() for w in TOKEN.findall(exclude)}
            kw = yake.KeywordExtractor(lan="en", n=2, top=10, stopwords=set(stopwords()))
            out = []
            for phrase, _ in kw.extract_keywords(text):
                p = phrase.lower()
                if not has_digit(p) and not bad & set(p.split()) and not set(p.split()) & DOCUMENT_WORDS:
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
        for source, line in (("title", title), ("heading", self.opening_title(text)), ("title", fallback_title)):
            if not line:
                continue
            n = self.name_of(line)
            name.not_a_type = name.not_a_type or n.not_a_type
            if n.category and not n.model and norm_line(line) == norm_line(cover_line(text)):
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
        if not name.category and (described := described_type(text)) and self._shared_description(described):
            name.category, sources["category"] = described, "description"
        stated = self.library.stated_type
        if not name.category and stated and re.search(rf"(?i)\b{re.escape(stated)}\b", text):
            name.category, sources["category"] = stated, "description"  # the family's type, stated in this run too
        for part in ("category", "model"):  # evidence too often wrong on the sets with gold tags: unknown, and why
            if (value := getattr(name, part)) and not trusted(sources[part]):
                setattr(name, part, None)
                sources[part] = withheld(sources[part], value)
        if not name.category and "category" not in sources:
            # a phrase frequent in this manual is one of its subjects, not its product type: on every set with
            # gold tags it never named the category, so the part stays unknown and says why
            sources["category"] = UNKNOWN_CATEGORY if not name.not_a_type else (
                f"unknown: the title's \"{name.not_a_type}\" is not a noun phrase (a part-of-speech tagger's "
                "reading), so no product type; no heading or opening line states one")
        nouns = self.keyphrases((window or text)[:FIRST_PAGE], exclude=f"{name.model or ''} {name.category or ''}")
        if nouns:
            sources["nouns"] = "keyphrase"
        evidence = {"heading": 0.3, "title": 0.3, "first page": 0.2}
        confidence = 0.2 + evidence.get(sources.get("model", ""), 0.0) + (0.2 if name.category else 0.0)
        cnm = CNM(category=name.category, nouns=nouns, model=name.model, confidence=round(min(confidence, 0.9), 2))
        return cnm, sources

    def _shared_description(self, described: str) -> bool:
        """Whether a described type can be the category: in a library of three manuals or more, near-duplicates
        share their type, so at least half of them must describe one with the same head noun ("a drop-in
        replacement for", "the latest update to" said by one manual are its wording, not a type)."""
        lib = self.library
        return lib.manuals < 3 or lib.described_heads[described.split()[-1]] >= 0.5 * lib.manuals

    def opening_title(self, text: str) -> str | None:
        """The title line at the start of a run (within its first 300 characters), if any."""
        head = text[:300]
        for h in hash_headings(head):
            if h.level == 1 and self.library.heading_counts[norm_line(h.text)] <= 1 and not is_section(h.text):
                return h.text
        m = TITLE_MARKER.search(head)
        return m.group(0).strip() if m and "content" not in m.group(0).lower() else None

    def tag_query(self, text: str, models: Sequence[str] | None = None) -> tuple[CNM, dict[str, str]]:
        """A question or a loose text: a known model named in it, else its own model-like tokens. Whole names are
        tried first, the longest first, then a name's tail from a word with a digit ("QX9" of "Brandco QX9") when
        no other known model ends the same way ("2020" names neither "Shades 2020" nor "Veils 2020"); never a
        name followed by a variant word ("QX9 Lite" does not name the "QX9"). The known models are `models` (the
        run's tagged models, given by the retrieval policy), else those the library's titles name."""
        low = f" {' '.join(TOKEN.findall(text.lower()))} "
        known = self.library.models if models is None else sorted(set(models), key=lambda m: (-len(m), m))

        def key(form: str) -> str:
            return " ".join(TOKEN.findall(form.lower()))

        tails = [(model, key(" ".join(model.split()[i:]))) for model in known
                 for i, w in enumerate(model.split()) if i and has_digit(w)]
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
        return tag_results(queries, lambda q: self.tag_query(q, models))

    # ---- the backend interface ------------------------------------------------------------------------------

    def extract(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[CnmResult]:
        """Tags for loose texts (questions, a hand-started run): a library model named in the text first."""

        def tag(text: str) -> tuple[CNM, dict[str, str]]:
            title, body = split_title(text)
            return self.tag(body, title=title) if title else self.tag_query(body)

        return tag_results(texts, tag, progress)

    def decide(self, pairs: Sequence[tuple[str, str]],
               progress: Callable[[int, int], None] | None = None) -> list[DecisionResult]:
        """Decisions for loose pairs of texts (no document around them): tag change or similarity drop."""
        return DocumentView(self, None, []).decide(pairs, progress)

    def for_document(self, doc: Any, spans: Sequence[tuple[int, int]], title: str | None = None) -> DocumentView:
        return DocumentView(self, doc, spans, written_title(doc) if title else None)
