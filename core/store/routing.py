"""Title routing (`retrieval=route`): the metadata baseline beside CHOP's CNM filter.

Many deployments know each document's product from its metadata. Routing reads the question for a product
mention, matches it against the documents' titles with the normaliser CHOP's tags are matched with
(`core.product_names.models_match`), and searches only the chunks of the document(s) named: a Chroma `where` on
`doc_id` (every chunk's metadata holds it, so nothing is indexed again) and a mask over the BM25 scores, through
the generic `RetrievalPolicy` filter of `core.store.retrieval`. CHOP infers its tags from the text; routing needs
titles, and says so where there are none to route by: a joined stream, or a single upload, is one document.

How a question names a title:
- a title's name is its words without a trailing "user manual", "manual", "guide" ("Samsung Galaxy S10 user
  manual" is named "Samsung Galaxy S10");
- its key words are the rarest of those words among all the titles, leaving out bare numbers and single
  characters ("S10" for the S10, "Lite" for the S10 Lite, "Note" for the Note 10, "Shades" for both Shades):
  brand and family words shared by many titles name none of them;
- the question names the title when a run of its words holding a key word matches the name by `models_match`
  ("S10", "Galaxy S10" and "Samsung Galaxy S10" all name "Samsung Galaxy S10"; "S10 Lite" and "S10e" do not).
  A key word without a digit must be written capitalised, as product names are ("Fit", not "fit the strap"), and a
  run followed by a capitalised variant word ("S10 Lite") names no title without it;
- where two titles are named by overlapping runs, the longer run wins: "Galaxy S10 Lite" routes to the S10 Lite,
  not to the S10; titles named by separate runs are all kept ("the X100 or the X200").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.infra.jsonio import JsonObject, JsonValue
from core.product_names import VARIANT_WORDS, models_match
from core.schema.chunks import Chunk
from core.schema.documents import Document

#: what routing applied when it could not route, as the app and the bench report show it
ONE_DOCUMENT = "none (one document: no titles to route by)"
NO_TITLES = "none (no titles to route by)"
NO_TITLE_NAMED = "none (no title named)"
NO_CHUNKS = "none (the named document has no chunks)"

# a word: letters and digits, with inner dots ("8.0") and a trailing plus ("S10+"); "_" and "-" split words
_WORD = re.compile(r"[^\W_]+(?:\.[^\W_]+)*\+?")
# trailing words that say what kind of document it is, not which product
_KIND_WORDS = frozenset({"manual", "manuals", "guide", "handbook", "user", "users", "owner", "owners", "s",
                         "instruction", "instructions", "operating", "reference"})


def title_words(title: str) -> list[str]:
    """The words naming a title's product: its words without the trailing kind of document ("user manual")."""
    words = _WORD.findall(title)
    while len(words) > 1 and words[-1].casefold() in _KIND_WORDS:
        words.pop()
    return words


@dataclass(frozen=True)
class _Title:
    title: str
    doc_ids: tuple[str, ...]  # the documents with this title
    name: str  # title_words joined by spaces: what `models_match` compares
    size: int  # how many words the name has
    keys: frozenset[str]  # casefolded key words: a run naming the title holds one of them


def _titles(titles: Mapping[str, str]) -> list[_Title]:
    by_title: dict[str, list[str]] = {}
    for doc_id, title in titles.items():
        if title and title.strip():
            by_title.setdefault(title.strip(), []).append(doc_id)
    names = {t: title_words(t) for t in by_title}
    df = Counter(w for words in names.values() for w in {w.casefold() for w in words})
    out = []
    for title, doc_ids in by_title.items():
        folded = {w.casefold() for w in names[title]}
        if not folded:
            continue
        # a key has a letter and more than one character: "Z Flip" is keyed by "flip", "Note 10" by "note" (a bare
        # number or letter in a question names nothing: "wait 10 seconds")
        telling = {w for w in folded if len(w) > 1 and any(c.isalpha() for c in w)} or folded
        rarest = min(df[w] for w in telling)
        out.append(_Title(title, tuple(doc_ids), " ".join(names[title]), len(names[title]),
                          frozenset(w for w in telling if df[w] == rarest)))
    return out


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _written_as_key(word: str) -> bool:
    """A key word as the question writes it: with a digit, or capitalised."""
    return any(ch.isdigit() for ch in word) or _capitalised(word)


class TitleRoute:
    """`RetrievalPolicy` of `retrieval=route` (see the module docstring). `titles`: doc_id -> title of every
    document searched."""

    mode = "filter"
    boost = 0.0
    pool = 0
    store_field = "doc_id"  # in every chunk's store metadata (core.store.index)
    label = "title routing"
    #: BM25 reads the question without the words that named the title once routing applied (measured in
    #: docs/RETRIEVAL.md: better than the whole question across the sets)
    residual = True

    def __init__(self, titles: Mapping[str, str] | None = None) -> None:
        self.titles = dict(titles or {})
        self._titles = _titles(self.titles)
        self._by_key: dict[str, list[_Title]] = {}
        for t in self._titles:
            for key in t.keys:
                self._by_key.setdefault(key, []).append(t)

    @property
    def routable(self) -> bool:
        return len(self.titles) > 1 and bool(self._titles)

    def named(self, query: str) -> list[tuple[_Title, str]]:
        """The titles the question names, each with the run of words that names it (the longest such run)."""
        words = _WORD.findall(query)
        folded = [w.casefold() for w in words]
        best: dict[str, tuple[int, int]] = {}  # title -> its longest naming run (i, j)
        by_title: dict[str, _Title] = {}
        for pos, word in enumerate(folded):
            for t in self._by_key.get(word, ()):
                if not _written_as_key(words[pos]):
                    continue
                for i in range(max(0, pos - t.size + 1), pos + 1):
                    for j in range(min(len(words), i + t.size), pos, -1):  # longest first
                        if j < len(words) and folded[j] in VARIANT_WORDS and _capitalised(words[j]):
                            continue  # "S10" in "S10 Lite": another model
                        if models_match(" ".join(words[i:j]), t.name):
                            held = best.get(t.title)
                            if held is None or j - i > held[1] - held[0]:
                                best[t.title], by_title[t.title] = (i, j), t
                            break
        # overlapping runs: the longer names the more specific title ("Galaxy S10 Lite" over "Galaxy S10")
        runs = sorted(best.items(), key=lambda kv: -(kv[1][1] - kv[1][0]))
        kept: list[tuple[str, tuple[int, int]]] = []
        for title, (i, j) in runs:
            if not any(i < kj and ki < j and kj - ki > j - i for _, (ki, kj) in kept):
                kept.append((title, (i, j)))
        return [(by_title[title], " ".join(words[i:j])) for title, (i, j) in kept]

    def tag_queries(self, queries: Sequence[str], values: Sequence[str] = ()) -> list[JsonObject]:
        """Each question's routing: the titles it names, their documents and the words that named them."""
        out: list[JsonObject] = []
        for q in queries:
            found = self.named(q) if self.routable else []
            out.append({"titles": [t.title for t, _ in found], "doc_ids": [d for t, _ in found for d in t.doc_ids],
                        "named": [run for _, run in found]})
        return out

    def chunk_value(self, chunk: Chunk) -> str:
        return chunk.doc_id

    def filter_values(self, tags: JsonObject, values: Sequence[str]) -> tuple[list[str], str]:
        if len(self.titles) == 1:
            return [], ONE_DOCUMENT
        if not self.routable:
            return [], NO_TITLES
        named = set(_texts(tags.get("doc_ids")))
        if not named:
            return [], NO_TITLE_NAMED
        kept = [v for v in values if v in named]
        return (kept, "route") if kept else ([], NO_CHUNKS)

    def residual_query(self, query: str, tags: JsonObject) -> str:
        """The question without the words that named the title: every chunk left is that document's."""
        if not self.residual:
            return query
        words = {w.casefold() for run in _texts(tags.get("named")) for w in _WORD.findall(run)}
        if not words:
            return query
        rest = _WORD.sub(lambda m: "" if m.group().casefold() in words else m.group(), query)
        return rest if re.search(r"\w", rest) else query

    def match(self, tags: JsonObject, chunk: Chunk) -> float:
        return 1.0 if chunk.doc_id in _texts(tags.get("doc_ids")) else 0.0


def _texts(value: JsonValue | None) -> list[str]:
    """A list of text in a question's tags (`tag_queries` writes them so); [] for anything else."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def document_titles(documents: Sequence[Document]) -> dict[str, str]:
    """doc_id -> title of documents, what `retrieval_policy` takes."""
    return {d.doc_id: d.title for d in documents}
