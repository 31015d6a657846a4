"""What the `extract` backend reads in a text before it knows the library: the words that name kinds and parts
of documents (the only words it knows, besides stop words and `rules.VARIANT_WORDS`; docs/METHODS.md lists
them), title and heading lines, model-like tokens without values, a product type described in words, and
candidate noun phrases."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.methods.chop.rules import (
    GENERIC_SERIES_WORDS,
    model_candidates,
)
from core.methods.chop.speech import noun_headed
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
FIRST_PAGE = 2000  # characters of a run that count as its first page


HEADING = re.compile(r"(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$")
# a heading written as a line underlined with one repeated character: Markdown's setext headings ("=" for the first
# level, "-" for the second) and reStructuredText's section titles (any of = - ~ * # ^, with or without an overline)
UNDERLINED = re.compile(r"(?m)^(?![ \t]*(?:\.\.|[|+*>-]\s))([ \t]*[^\s=~*#^|+-][^\n]*?)[ \t]*\n([=~*#^-])\2{2,}[ \t]*$")
TITLE_MARKER = re.compile(r"(?im)^[ \t]*(?:table of contents|contents|[A-Z][^\n]{2,60}\b(?:user manual|user guide|"
                     r"owner'?s manual|instruction manual|operating instructions))[ \t]*$")
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+.]*[A-Za-z0-9+]|[A-Za-z0-9]")
NAME_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9'+.-]*[A-Za-z0-9+])?")  # a title's words, hyphen-joined parts kept
WORD = re.compile(r"[A-Za-z][a-z]*(?:[-'][A-Za-z]+)*|[A-Z]{2,}")
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



def first_level_lines(text: str) -> list[tuple[int, str]]:
    """(offset, text) of the first-level headings a plain or Markdown text writes: `# ...` lines and the lines
    underlined like the text's first underlined heading (reStructuredText's rule: the first adornment met is the
    top level; "=" in Markdown's setext form)."""
    out = [(m.start(), m.group(2).strip()) for m in HEADING.finditer(text) if len(m.group(1)) == 1]
    underlined = list(UNDERLINED.finditer(text))
    if underlined:
        top = underlined[0].group(2)
        out += [(m.start(1), m.group(1).strip()) for m in underlined if m.group(2) == top]
    return sorted(out)


def first_heading(text: str) -> str | None:
    """The first heading of a text, of any level and form (`#` lines, underlined lines), when it names something
    besides a kind or a part of a document ("Overview", "Contents"): where a document writes its own title, after a
    cover comment or a licence header. None when the text opens with a section instead."""
    found = [(m.start(), m.group(2).strip()) for m in HEADING.finditer(text)]
    found += [(m.start(1), m.group(1).strip()) for m in UNDERLINED.finditer(text)]
    if not found:
        return None
    heading = min(found)[1]
    return heading if any(w.lower() not in DOCUMENT_WORDS | SECTION_WORDS for w in TOKEN.findall(heading)) else None


def norm_line(line: str) -> str:
    return " ".join(re.findall(r"\w+", line.casefold()))


def models_in(text: str, series: tuple[str, ...] = GENERIC_SERIES_WORDS) -> Counter[str]:
    """`rules.model_candidates` without values ("20kHz", "40mA"); short codes count after the generic series
    words or the library's own (`Library.series`), never after a product word of a fixed list."""
    return Counter({m: n for m, n in model_candidates(text, series).items() if not _VALUE.match(m.split()[0])})


def is_section(heading: str) -> bool:
    """A heading numbered like a chapter or appendix, or naming a part of a document: never a document's title."""
    words = {w.lower() for w in TOKEN.findall(heading)}
    return bool(_NUMBERED.match(heading.lstrip("# "))) or bool(words & SECTION_WORDS)


def cover_line(text: str) -> str:
    """The first non-empty line of a text: on a PDF's first page, usually the product's name."""
    return next((line.strip() for line in text[:400].splitlines() if line.strip()), "")


def described_type(text: str) -> str | None:
    """The product type a document states in words on its first lines ("A program for ...", "... library for
    ...") or in a sentence ("..., which is a library for ..."): the lower-case words before "for", "that",
    "which" or "to", without stop words and document words, when the tagger reads them as a noun phrase."""
    stop = stopwords()
    head = "\n".join(text[:FIRST_PAGE].splitlines()[:12])
    for m in _DESCRIBED.finditer(head):
        if _COPULA & set(m.group(1).lower().split()):  # "the pen is designed for": a clause, not a noun phrase
            continue
        words = [w for w in m.group(1).split() if w.islower() and w not in stop and w not in DOCUMENT_WORDS]
        if words and m.group(1).split()[-1] == words[-1] and noun_headed(" ".join(words), _line_at(head, m.end())):
            return " ".join(words)
    return None


_DETERMINER = r"(?:the|this|that|your|our|a|an|each|every|one)"


def types_after_models(named: Sequence[tuple[str, str]]) -> Counter[str]:
    """In how many manuals each product type is stated right after the manual's own model ("the Orbit K5 flight
    controller", "The Nucleo F401RE board features ..."), from (model, text) pairs: one or two lower-case words,
    neither a stop word nor a document word, that the same text also writes after a determiner on their own ("the
    board", "a flight controller") and the part-of-speech tagger reads as a noun phrase in its sentence
    (`speech.noun_headed`), so a verb after the model ("the Orbit K5 keeps its settings") never counts."""
    stop = stopwords()
    found: Counter[str] = Counter()
    for model, text in named:
        stated = set()
        for m in re.finditer(rf"(?<![\w-]){re.escape(model)}[ \t]+([a-z][a-z-]+)(?:[ \t]+([a-z][a-z-]+))?", text):
            words = [w for w in m.groups() if w]
            for n in (2, 1)[2 - len(words):]:
                phrase = " ".join(words[:n])
                if phrase in stated or any(w in stop or w in DOCUMENT_WORDS for w in words[:n]):
                    continue
                if not noun_headed(phrase, _line_at(text, m.end())):
                    continue  # a verb or an adjective after the model, as the tagger reads its sentence
                if re.search(rf"(?i)\b{_DETERMINER}\s+{re.escape(phrase)}\b(?![ \t]*{re.escape(model)})", text):
                    stated.add(phrase)
        found.update(stated)
    return found


def _line_at(text: str, offset: int) -> str:
    """The line of `text` holding `offset`, at most 300 characters either side: the sentence a phrase is tagged in."""
    start = text.rfind("\n", max(0, offset - 300), offset) + 1 or max(0, offset - 300)
    end = text.find("\n", offset, offset + 300)
    return text[start:end if end >= 0 else offset + 300]


def has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def names_something(words: Sequence[str]) -> bool:
    """Whether model words tell a product apart: a word of two letters or more, or one mixing letters and digits
    ("K4", "B07"); not a bare number ("10", "8.0") with at most single letters."""
    return any(sum(ch.isalpha() for ch in w) >= 2 or (has_digit(w) and any(ch.isalpha() for ch in w))
               for w in words)


def series_words(titles: Sequence[str], common: frozenset[str], models: set[str]) -> tuple[str, ...]:
    """The words after which this library writes short model codes: the capitalised words most titles share (a
    brand, a family) and the words before a code inside the titles' models ("Pad" of "Pad B 7.0"), besides the
    generic ones. Learned from the titles, so no product word is written into the extractor."""
    shared = {w for t in titles for w in TOKEN.findall(t) if w.lower() in common and w[:1].isupper()}
    inside = {w for parts in (m.split() for m in models) for i, w in enumerate(parts)
              if w.isalpha() and len(w) >= 2 and w[:1].isupper() and any(has_digit(x) for x in parts[i + 1:])}
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
    not_a_type: str | None = None  # title words where a product type would stand that are no noun phrase


@dataclass
class Library:
    """What `prepare` learns from the whole library."""

    units: int = 0
    model_df: Counter[str] = field(default_factory=Counter)  # normalised model -> units naming it
    phrase_df: Counter[str] = field(default_factory=Counter)  # noun phrase -> units holding it
    heading_counts: Counter[str] = field(default_factory=Counter)  # first-level heading text -> occurrences
    common_title_words: frozenset[str] = frozenset()
    #: shared title words that the texts write right before their models ("Orbit K5", "Nucleo F401RE"): a
    #: family's name, part of the model; the other shared words are a brand or a document word, dropped
    family_words: frozenset[str] = frozenset()
    models: list[str] = field(default_factory=list)  # every model a title named, longest first
    #: words after which a short code is a model ("K4" after a brand or family word the titles share): the
    #: generic ones and those the library's titles teach
    series: tuple[str, ...] = GENERIC_SERIES_WORDS
    #: most titles name a model: then a title without a digit names one too (near-duplicates differ by model)
    titles_name_models: bool = False
    lower_share: dict[str, float] = field(default_factory=dict)  # title word -> share written in lower case
    #: the product type most of the library's manuals state right after their own model (`types_after_models`)
    stated_type: str | None = None
    #: the product types the library's titles name after their models, and the stated type: a title without a
    #: digit that ends with one's head noun ("Zephyr Orange Controller") has a type in it, not a longer model
    types: tuple[str, ...] = ()
    #: manuals in the library, and in how many each head noun of a described type is stated ("A ... controller
    #: for ..."): in a family, a description only one manual gives ("a drop-in replacement for") is no type
    manuals: int = 0
    described_heads: Counter[str] = field(default_factory=Counter)

    def idf(self, df: int) -> float:
        return math.log((1 + self.units) / (1 + df)) + 1.0
