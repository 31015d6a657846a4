"""Parts of speech for the `extract` backend: a category must be a noun phrase where the text writes it.

A product type is a noun ("flight controller", "program"); the words the extractor's patterns sometimes catch in
its place are not ("optimized", "designed", "keeps", "provides"). The patterns look at word shapes and
positions; this module asks a real part-of-speech tagger what each word is.

The tagger is the Brill tagger of the Pattern project as TextBlob ships it: a lexicon of about 100k words with
their most frequent tag, Brill's lexical rules for unknown words and his contextual rules, all inside the
`textblob` wheel. It tags offline with nothing to download, in well under a millisecond per phrase; NLTK's
perceptron tagger and spaCy's and stanza's pipelines fetch their models at run time, which a machine without
internet cannot do. (TextBlob's own `tag()` skips the contextual and lexical rules; `tags` applies them, as
Pattern does.)

Tags are the Penn Treebank's: NN/NNS/NNP/NNPS nouns, JJ adjectives, VB* verbs. A phrase is noun-headed when its
last word is a noun and every word before it a noun, an adjective or a gerund ("charging dock"). The lexicon
keeps one tag per word, so a noun that is more often a verb ("monitor", "pump", "watch") is tagged as one; such a
word still counts as a noun when tagged in its base form (VB, VBP) or as a comparative ("cleaner") and the
lexicon knows its plural as a plural noun ("monitors"); a word the lexicon lacks that the suffix rules call a
comparative is an agent noun ("defroster"). A third-person verb ("keeps", "supports"), a participle
("designed") or an adjective ("compatible") never counts. An unknown hyphenated word is tagged as an adjective by
the rules, so a hyphenated last word is judged by its last part ("macro-oscillator" by "oscillator").
"""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from typing import Any

_NOUN = ("NN", "NNS", "NNP", "NNPS")
_MODIFIER = _NOUN + ("JJ", "JJR", "JJS", "VBG")
_AMBIGUOUS = ("VB", "VBP", "JJR")  # tags a noun the lexicon knows mostly in another use may get
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
# a tagger's token: a word with its inner apostrophes, dots and hyphens ("don't", "v1.2", "drop-in"), or a mark
_TOKEN = re.compile(r"[A-Za-z0-9][\w'.-]*[\w]|[A-Za-z0-9]|[^\w\s]")


@lru_cache(maxsize=1)
def _pattern() -> tuple[Any, Any]:
    """TextBlob's tagger module and its English lexicon, loaded on first use (about 0.1 s). The module is loaded
    from its file rather than imported: importing any part of the `textblob` package runs its `__init__`, which
    imports NLTK and, through it, scipy.stats (1.7 s on a cold process, for nothing the tagger uses)."""
    package = importlib.util.find_spec("textblob")
    if package is None or not package.submodule_search_locations:
        raise ImportError("textblob is not installed (requirements.txt)")
    root = package.submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location("chunklens_textblob_text", os.path.join(root, "_text.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"textblob's tagger module is missing from {root}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    en = os.path.join(root, "en")
    lexicon = module.Lexicon(path=os.path.join(en, "en-lexicon.txt"),
                             morphology=os.path.join(en, "en-morphology.txt"),
                             context=os.path.join(en, "en-context.txt"),
                             entities=os.path.join(en, "en-entities.txt"), language="en")
    return module, lexicon


def _lexicon() -> Any:
    return _pattern()[1]


def _tag(tokens: list[str], in_context: bool) -> list[tuple[str, str]]:
    module, lx = _pattern()
    found = module.find_tags(tokens, lexicon=lx, morphology=lx.morphology, entities=lx.entities,
                             context=lx.context if in_context else None, default=("NN", "NNP", "CD"),
                             language="en")
    return [(w, t) for w, t in found]


@lru_cache(maxsize=4096)
def tags(sentence: str) -> tuple[tuple[str, str], ...]:
    """(word, Penn tag) of every word of `sentence`, in order, read with the contextual rules."""
    tokens = _TOKEN.findall(sentence)
    return tuple((w, t) for w, t in _tag(tokens, True) if _WORD.fullmatch(w))


def _noun(word: str, tag: str) -> bool:
    if tag in _NOUN:
        return True
    if "-" in word.strip("-"):
        part = word.rsplit("-", 1)[-1]
        return _noun(part, _tag([part], False)[0][1])
    lx, w = _lexicon(), word.lower()
    if w not in lx:  # tagged by the suffix rules: an unknown "-er" word is an agent noun more than a comparative
        return tag == "JJR"
    return tag in _AMBIGUOUS and any(lx.get(w + s) == "NNS" for s in ("s", "es"))


def noun_headed(phrase: str, context: str | None = None) -> bool:
    """Whether `phrase` is a noun phrase: tagged in `context` (the sentence the text writes it in) when given and
    found there, else word by word from the lexicon, lower case. False for an empty phrase."""
    words = _WORD.findall(phrase)
    if not words:
        return False
    tagged = _find(words, tags(context)) if context else None
    if tagged is None:
        tagged = _tag([w.lower() for w in words], False)
    *before, (last, last_tag) = tagged
    return _noun(last, last_tag) and all(t in _MODIFIER or _noun(w, t) for w, t in before)


def _find(words: list[str], tagged: tuple[tuple[str, str], ...]) -> list[tuple[str, str]] | None:
    """The tagged words of the first place `words` stand in `tagged`, compared case-folded."""
    folded, written = [w.casefold() for w in words], [w.casefold() for w, _ in tagged]
    n = len(words)
    for i in range(len(tagged) - n + 1):
        if written[i:i + n] == folded:
            return list(tagged[i:i + n])
    return None
