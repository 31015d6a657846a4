"""What a library's titles say, for the `extract` backend: a document's title (the one given, or the heading its
text writes when the given one is only a file name), the manuals of a library with their titles, and what is
learned across them: the shared words that are a family's name (`family_words`) and the product type most
manuals state right after their own model (`stated_type`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, Protocol

from core.infra.stopping import check_stop
from core.methods.chop.reading import (
    DOCUMENT_WORDS,
    FIRST_PAGE,
    NAME_TOKEN,
    Library,
    Name,
    first_heading,
    first_level_lines,
    has_digit,
    norm_line,
    types_after_models,
)
from core.methods.chop.rules import VARIANT_WORDS


class Namer(Protocol):
    """What these functions ask of the backend: the library it learns and how it splits a title."""

    library: Library

    def name_of(self, line: str) -> Name: ...


def first_level_headings(doc: Any) -> list[tuple[int, str]]:
    """(offset, text) of every first-level heading: Markdown `# ...` lines (not in a PDF, where a `#` line is a
    shell prompt or a comment) and level-1 PDF outline entries."""
    pdf = bool(getattr(doc, "page_starts", None))
    out = [] if pdf else first_level_lines(doc.text)
    out += [(off, title) for off, level, title in getattr(doc, "outline", []) or [] if level in (0, 1)]
    return sorted(out)


def without_variants(words: Sequence[str]) -> list[str]:
    return [w for w in words if w.lower() not in VARIANT_WORDS]


def last_index(spelled: Sequence[str], word: str) -> int:
    return len(spelled) - 1 - list(reversed(spelled)).index(word)


def word_before(spelled: Sequence[str], first: str) -> str:
    at = spelled.index(first)
    return spelled[at - 1] if at > 0 else ""


def with_family_word(spelled: Sequence[str], first: str, model: str) -> str:
    """A model that names nothing once the words most titles share are dropped ("2.0", "6 Mini" of "Zephyr 6
    Mini"): the shared word written right before it in the title, the family's name, goes back in front
    ("Zephyr 6 Mini")."""
    before = word_before(spelled, first)
    return f"{before} {model}" if before[:1].isupper() and not has_digit(before) else model


def titled_texts(documents: Sequence[Any], heading_counts: Counter[str]) -> list[tuple[str, str]]:
    """(title, text) of every manual of a library: a document and its title, or in a joined stream each part
    from a first-level heading found once in the library to the next."""
    out = []
    for doc in documents:
        check_stop()
        if not doc.segments:
            if title := written_title(doc):
                out.append((title, doc.text))
            continue
        heads = [(off, t) for off, t in first_level_headings(doc) if heading_counts[norm_line(t)] == 1]
        ends = [off for off, _ in heads[1:]] + [len(doc.text)]
        out += [(t, doc.text[off:end]) for (off, t), end in zip(heads, ends)]
    return out


def stated_type(backend: Namer, manuals: Sequence[tuple[str, str]]) -> str | None:
    """The product type the library's manuals state after their own models, voted: the phrase stated in the most
    manuals (the longer one on a tie), if that is at least three and at least half of them. Near-duplicates share
    their type, so one manual's way of saying it is evidence for the others; a phrase fewer state is that manual's
    wording, not the family's type. `manuals`: the library's (title, text) pairs (`titled_texts`)."""
    named = [(n.model, body) for title, body in manuals if (n := backend.name_of(title)).model]
    votes = types_after_models(named)
    if not votes:
        return None
    phrase, count = max(votes.items(), key=lambda kv: (kv[1], len(kv[0].split()), kv[0]))
    return phrase if count >= max(3, 0.5 * len(named)) else None


def family_words(backend: Namer, manuals: Sequence[tuple[str, str]]) -> frozenset[str]:
    """The shared title words that the documents' texts write right before their own model at least as often as
    without it: "Orbit" of "Brandco Orbit K5" (the texts say "Orbit K5"), not "Works" of "Brandco Works Lantern
    2021" (they say "Lantern 2021"). Never a word whose titles name two product types or more: a maker's name
    ("Brandco QX9 Cordless Drill", "Brandco RT4 Saw"), not a family's. `manuals`: the library's (title, text)
    pairs (`titled_texts`)."""
    lib = backend.library
    with_word: Counter[str] = Counter()
    named: Counter[str] = Counter()
    types: dict[str, set[str]] = {}
    for title, body in manuals:
        check_stop()
        name = backend.name_of(title)
        if not name.model:
            continue
        spelled = [w for w in NAME_TOKEN.findall(title) if w.lower() not in DOCUMENT_WORDS]
        first = name.model.split()[0]
        before = word_before(spelled, first) if first in spelled else ""
        if before.lower() not in lib.common_title_words:
            continue
        model = name.model
        types.setdefault(before.lower(), set()).add(norm_line(name.category or ""))
        # what the text writes, its title lines aside (they are the title, not the text's usage)
        text = "\n".join(line for line in body.splitlines() if norm_line(line) != norm_line(title))
        said = len(re.findall(rf"(?<![\w-]){re.escape(model)}(?![\w-])", text))
        named[before.lower()] += said
        with_word[before.lower()] += len(re.findall(rf"(?<![\w-]){re.escape(before)}\s+{re.escape(model)}(?![\w-])",
                                                    text))
    return frozenset(w for w, n in named.items() if n and with_word[w] >= 0.5 * n and len(types[w] - {""}) < 2)


def written_title(doc: Any) -> str | None:
    """A document's title: the one it was given, unless that is only its file's name ("nucleo_l412rb_p" of
    nucleo_l412rb_p.md) and its text writes a heading on its first page ("ST Nucleo L412RB-P"): a file name is
    a slug of the title at best, with its separators and variant marks lost. PDFs keep theirs (a `#` or underlined
    line in a PDF's text is no heading)."""
    title = getattr(doc, "title", None)
    source = getattr(doc, "source", "") or ""
    if getattr(doc, "page_starts", None) or not source or not title or title != PurePath(source).stem:
        return title
    return first_heading(doc.text[:FIRST_PAGE]) or spelled_out(title, doc.text) or title


def spelled_out(slug: str, text: str) -> str | None:
    """How the text most often writes a file name's words as a name, with capitals and its own separators
    ("Nucleo L412RB-P" for nucleo_l412rb_p), if it does."""
    parts = [p for p in re.split(r"[\s_.-]+", slug) if p]
    if len(parts) < 2:
        return None
    pattern = r"[ \t_-]*+".join(re.escape(p) for p in parts)  # no part holds a separator: taken whole
    spellings = Counter(m.group(0) for m in re.finditer(rf"(?i)(?<![\w-]){pattern}(?![\w-])", text)
                        if any(ch.isupper() for ch in m.group(0)))
    return spellings.most_common(1)[0][0] if spellings else None
