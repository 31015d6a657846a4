"""Parts of speech for the `extract` backend: a category must be a noun phrase where the text writes it.

A product type is a noun ("flight controller", "program"); the words the extractor's patterns sometimes catch in
its place are not ("optimized", "designed", "keeps", "provides"). The patterns look at word shapes and
positions; this module asks a real part-of-speech tagger what each word is in its sentence.

The tagger is TextBlob's English tagger (Pattern's Brill-style lexicon of about 100k words with its contextual
and morphological rules), which ships inside the `textblob` wheel: it tags offline with nothing to download,
in well under a millisecond per phrase. The usual alternatives fetch their models at run time (NLTK's perceptron
tagger, spaCy's and stanza's pipelines), and a machine without internet cannot use them.

Tags are the Penn Treebank's: NN/NNS/NNP/NNPS nouns, JJ adjectives, VB* verbs. A phrase is noun-headed when its
last word is a noun and every word before it a noun, an adjective or a gerund ("charging dock"). An unknown
hyphenated word is tagged as an adjective by the lexicon's rules, so a hyphenated last word is judged by its last
part ("macro-oscillator" by "oscillator").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

_NOUN = ("NN", "NNS", "NNP", "NNPS")
_MODIFIER = _NOUN + ("JJ", "JJR", "JJS", "VBG")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


@lru_cache(maxsize=1)
def _tagger() -> Callable[[str], list[tuple[str, str]]]:
    from textblob.en import tag  # imported on first use: it loads its lexicon (about 0.2 s)

    return tag


@lru_cache(maxsize=4096)
def tags(sentence: str) -> tuple[tuple[str, str], ...]:
    """(word, Penn tag) of every word of `sentence`, in order."""
    return tuple((w, t) for w, t in _tagger()(sentence) if _WORD.fullmatch(w))


def _head_tag(word: str, tag: str) -> str:
    if "-" in word.strip("-") and tag not in _NOUN:
        return tags(f"the {word.rsplit('-', 1)[-1]}")[-1][1]
    return tag


def noun_headed(phrase: str, context: str | None = None) -> bool:
    """Whether `phrase` is a noun phrase: tagged in `context` (the sentence the text writes it in) when given and
    found there, else as the object of "the" ("the flight controller"), lower case. False for an empty phrase."""
    words = _WORD.findall(phrase)
    if not words:
        return False
    tagged = _find(words, tags(context)) if context else None
    if tagged is None:
        tagged = list(tags("the " + " ".join(words).lower()))[1:]
    if len(tagged) != len(words):
        return False
    *before, (last, last_tag) = tagged
    return _head_tag(last, last_tag) in _NOUN and all(t in _MODIFIER for _, t in before)


def _find(words: list[str], tagged: tuple[tuple[str, str], ...]) -> list[tuple[str, str]] | None:
    """The tagged words of the first place `words` stand in `tagged`, compared case-folded."""
    folded = [w.casefold() for w in words]
    n = len(words)
    for i in range(len(tagged) - n + 1):
        if [w.casefold() for w, _ in tagged[i:i + n]] == folded:
            return list(tagged[i:i + n])
    return None
