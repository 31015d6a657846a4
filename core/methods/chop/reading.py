"""What the `extract` backend reads in a text before it knows the library: the words that name kinds and parts
of documents (the only words it knows, besides stop words and `rules.VARIANT_WORDS`; docs/METHODS.md lists
them), title and heading lines, model-like tokens without values, a product type described in words, and
candidate noun phrases."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from core.chunkers.headers import MAX_HEADING_CHARS
from core.infra.stopping import check_stop
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


# the start of a `#` heading line, read to the line's end (`hash_headings` reads the rest)
_HASH_LINE = re.compile(r"(?m)^#{1,6}[ \t][^\n]*")
# a line of one repeated character under a heading (`underlined_headings`)
_RULE_LINE = re.compile(r"(?m)^([=~*#^-])\1{2,}+[ \t]*$")
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



class Heading(NamedTuple):
    """A heading line of a text: where its line starts, its level (the number of `#`s; 0 for an underlined one),
    its text as written (trailing blanks and `#`s off, other blanks kept) and, for an underlined one, the
    character it is underlined with."""

    start: int
    level: int
    text: str
    mark: str = ""


def hash_headings(text: str) -> list[Heading]:
    r"""Every `#` heading line of a text: one to six `#`, a blank, then the heading, up to MAX_HEADING_CHARS
    characters a line. The heading is the shortest text after the opening blanks that leaves only blanks and `#`s
    (as `(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$` read it; read per line here, because that pattern's lazy text before
    `[ \t#]*` backtracked quadratically on a heading followed by many blanks: seconds for 20,000)."""
    out = []
    for m in _HASH_LINE.finditer(text):
        line = m.group()
        if len(line) > MAX_HEADING_CHARS:
            continue
        level = len(line) - len(line.lstrip("#"))
        rest = line[level:]
        body = rest.lstrip(" \t")
        if body:
            out.append(Heading(m.start(), level, body[:max(1, len(body.rstrip(" \t#")))]))
        elif len(rest) > 1:  # only blanks after the `#`s: the pattern's text was the last of them
            out.append(Heading(m.start(), level, rest[-1]))
    return out


def underlined_headings(text: str) -> list[Heading]:
    """Every heading written as a line underlined with one repeated character: Markdown's setext headings ("=" for
    the first level, "-" for the second) and reStructuredText's section titles (any of = - ~ * # ^ three times or
    more, with or without an overline). The heading line opens with a character that is neither a blank nor one
    of = ~ * # ^ | + -, is no list item, quote or table row ("- ", "> ", "| ") and no comment (".."), and is at
    most MAX_HEADING_CHARS long. Read from each underline up to the line above it (the pattern it replaces had a
    lazy heading text before trailing blanks, quadratic on a line of many blanks)."""
    out = []
    for m in _RULE_LINE.finditer(text):
        end = m.start() - 1  # the line break before the underline
        if end < 0:
            continue
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        opening = line.lstrip(" \t")
        after = opening[1:2] or "\n"  # the character after the opening one (the line break, on a one-character line)
        if len(line) > MAX_HEADING_CHARS or not opening or opening[0].isspace() or opening[0] in "=~*#^|+-" \
                or opening.startswith("..") or (opening[0] == ">" and after.isspace()):
            continue
        out.append(Heading(start, 0, line.rstrip(" \t"), m.group(1)))
    return out


def first_level_lines(text: str) -> list[tuple[int, str]]:
    """(offset, text) of the first-level headings a plain or Markdown text writes: `# ...` lines and the lines
    underlined like the text's first underlined heading (reStructuredText's rule: the first adornment met is the
    top level; "=" in Markdown's setext form)."""
    out = [(h.start, h.text.strip()) for h in hash_headings(text) if h.level == 1]
    underlined = underlined_headings(text)
    if underlined:
        top = underlined[0].mark
        out += [(h.start, h.text.strip()) for h in underlined if h.mark == top]
    return sorted(out)


def first_heading(text: str) -> str | None:
    """The first heading of a text, of any level and form (`#` lines, underlined lines), when it names something
    besides a kind or a part of a document ("Overview", "Contents"): where a document writes its own title, after a
    cover comment or a licence header. None when the text opens with a section instead."""
    found = [(h.start, h.text.strip()) for h in hash_headings(text) + underlined_headings(text)]
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
# a determiner and the blanks after it, in any case: where a product type may be stated on its own ("the board")
_DETERMINED = re.compile(rf"(?i)\b{_DETERMINER}\s++")
# the letters and hyphens a case-blind reading of a lower-case phrase accepts: ASCII letters, and the four others
# Python's case-insensitive matching takes for one ("K" the Kelvin sign for "k", "ſ" for "s", "ı" and "İ" for "i")
_PHRASE_CHARS = re.compile("[A-Za-z\u0130\u0131\u017f\u212a-]*+")
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_BOUNDARY = re.compile(r"\b")
# the one or two lower-case words after a model ("Orbit K5 flight controller"), read from the model's end (never from
# inside a run of blanks: a search from each blank of a long run would scan the rest of it each time)
_WORDS_AFTER = re.compile(r"(?<![ \t])[ \t]++([a-z][a-z-]+)(?:[ \t]++([a-z][a-z-]+))?")
_WORD_OR_HYPHEN = re.compile(r"[\w-]")


def types_after_models(named: Sequence[tuple[str, str]]) -> Counter[str]:
    """In how many manuals each product type is stated right after the manual's own model ("the Orbit K5 flight
    controller", "The Nucleo F401RE board features ..."), from (model, text) pairs: one or two lower-case words,
    neither a stop word nor a document word, that the same text also writes after a determiner on their own ("the
    board", "a flight controller") and the part-of-speech tagger reads as a noun phrase in its sentence
    (`speech.noun_headed`), so a verb after the model ("the Orbit K5 keeps its settings") never counts.

    One pass over each text for its mentions of the model and one for its determiners (`determined_phrases`):
    searching the whole text again for each mention's words made a 72 KB manual naming its model 1,300 times
    cost seconds before its first chunk."""
    stop = stopwords()
    found: Counter[str] = Counter()
    for model, text in named:
        check_stop()
        stated: set[str] = set()
        determined: set[str] | None = None  # read when a mention first needs it
        for words, end in words_after(model, text):
            for n in (2, 1)[2 - len(words):]:
                phrase = " ".join(words[:n])
                if phrase in stated or any(w in stop or w in DOCUMENT_WORDS for w in words[:n]):
                    continue
                if determined is None:
                    determined = determined_phrases(text, model)
                if phrase in determined and noun_headed(phrase, _line_at(text, end)):
                    stated.add(phrase)  # not a verb or an adjective after the model, as the tagger reads its sentence
        found.update(stated)
    return found


def words_after(model: str, text: str) -> Iterator[tuple[list[str], int]]:
    """The one or two lower-case words after each mention of `model` (a name: no blank at its ends; as a whole
    word: no letter, digit or hyphen before it) and where they end, in order, mentions inside the words of an
    earlier one skipped. The model is found by plain string search, linear in the text whatever its name."""
    at = text.find(model)
    while at >= 0:
        check_stop()
        words = _WORDS_AFTER.match(text, at + len(model))
        if words is None or (at > 0 and _WORD_OR_HYPHEN.match(text, at - 1)):
            at = text.find(model, at + 1)
            continue
        yield [w for w in words.groups() if w], words.end()
        at = text.find(model, words.end())


def determined_phrases(text: str, model: str) -> set[str]:
    r"""Every phrase of one or two words of letters and hyphens that `text` writes after a determiner, in any
    case, as a whole word and not followed by `model` ("the board", "a flight controller"; not "the board
    Orbit K5"), lower case. A lower-case phrase is in it exactly when
    `(?i)\b{_DETERMINER}\s+{phrase}\b(?![ \t]*{model})` finds it in the text, read here in one pass over the
    determiners rather than one search of the whole text per phrase."""
    followed = re.compile(rf"(?i)[ \t]*{re.escape(model)}")
    out: set[str] = set()
    for m in _DETERMINED.finditer(text):
        check_stop()
        first = m.end()
        first_end = _run_end(text, first)
        ends = _word_ends(text, first, first_end)
        if text.startswith(" ", first_end) and first_end > first:  # a second word after one space
            ends += _word_ends(text, first_end + 1, _run_end(text, first_end + 1))
        out.update(text[first:end].translate(_FOLD).lower() for end in ends if not followed.match(text, end))
    return out


def _run_end(text: str, start: int) -> int:
    """Where the run of letters and hyphens at `start` ends (`start` itself when there is none)."""
    m = _PHRASE_CHARS.match(text, start)  # matches everywhere, maybe empty
    return m.end() if m else start


def _word_ends(text: str, start: int, stop: int) -> list[int]:
    """The word boundaries after `start` up to `stop` (the end of a run of letters and hyphens): where a phrase
    starting at `start` may end."""
    return [b.start() for b in _BOUNDARY.finditer(text, start + 1, stop + 1) if b.start() <= stop]


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
