"""How right CHOP's CNM tags are, against gold tags (a QA set's `cnm` per document; see sample_data/README.md).

Over the chunks of a run that carry a CNM and lie in a document with gold tags:
- category accuracy: the share of those with a gold category whose category matches it. Categories match when
  the tag holds the gold category's words in order, case-folded, punctuation ignored ("Split Air-Conditioner"
  names an air conditioner; "conditioner" does not);
- model accuracy: the share of those with a gold model whose model matches it, by `models_match` (the rule the
  CNM filter searches with, so a tag that counts here is one the filter would find);
- empty rate: the share whose tag is empty (no category, no nouns, no model): nothing for the prefix or the
  filter to work with.
- right / wrong / unknown, for the category and the model apart: of the chunks with a gold part, the share whose
  part matches (right, the accuracy above), is given and does not match (wrong: what the filter trusts and the
  person inspecting stops trusting), or is empty (unknown). They add up to 1; a tagger that says "unknown" where
  it cannot tell moves chunks from wrong to unknown, never to right.
- copy rate (no gold needed): the share whose model is one of the prompts' example models that their document
  never names, i.e. copied from the prompt.
A chunk of a joined stream is judged against the gold of the source document holding its midpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.evaluation.fields import FieldShow, register_report_fields
from core.methods.chop.cnm import CNM, PROMPT_EXAMPLE_MODELS, cnm_sources
from core.methods.chop.rules import models_match
from core.schema.chunks import Chunk
from core.schema.documents import Document, documents_by_id
from core.schema.runs import ChunkedRun


@dataclass(frozen=True)
class PartShares:
    """Of the chunks whose gold has this part: the shares tagged right, wrong and unknown (empty)."""
    right: float
    wrong: float
    unknown: float


@dataclass(frozen=True)
class CnmAccuracy:
    chunks: int  # tagged chunks with gold tags to compare against
    category_accuracy: float | None  # None: no gold category
    model_accuracy: float | None  # None: no gold model
    empty_rate: float
    category: PartShares | None = None  # None: no gold category
    model: PartShares | None = None  # None: no gold model


def _shares(given: Sequence[str | None], gold: Sequence[str], match: Callable[[str, str], bool]) -> PartShares | None:
    if not gold:
        return None
    right = sum(1 for t, g in zip(given, gold) if t and match(g, t))
    unknown = sum(not t for t in given)
    n = len(gold)
    return PartShares(right=right / n, wrong=(n - right - unknown) / n, unknown=unknown / n)


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


def categories_match(gold: str | None, tag: str | None) -> bool:
    if not gold or not tag:
        return False
    g, t = _words(gold), _words(tag)
    return g.strip() != "" and g in t


def gold_of(chunk: Chunk, docs: dict[str, Document]) -> dict[str, str] | None:
    """The gold tags for a chunk: its document's, or in a stream its midpoint's source document's."""
    doc = docs.get(chunk.doc_id)
    if doc is None:
        return None
    if not doc.segments:
        return doc.cnm
    seg = doc.segment_at((chunk.start + chunk.end) // 2)
    return seg.cnm if seg else None


def cnm_accuracy(chunks: Sequence[Chunk], documents: Sequence[Document]) -> CnmAccuracy | None:
    """The three shares over the tagged chunks that have gold tags; None when there are none."""
    docs = documents_by_id(documents)
    judged = [(tag, gold) for c in chunks if (tag := CNM.of(c)) is not None and (gold := gold_of(c, docs))]
    if not judged:
        return None
    with_category = [(tag, gold) for tag, gold in judged if gold.get("category")]
    with_model = [(tag, gold) for tag, gold in judged if gold.get("model")]
    empty = sum(1 for tag, _ in judged if tag.is_empty())
    category = _shares([t.category for t, _ in with_category], [g["category"] for _, g in with_category],
                       categories_match)
    model = _shares([t.model for t, _ in with_model], [g["model"] for _, g in with_model], models_match)
    return CnmAccuracy(
        chunks=len(judged),
        category_accuracy=category.right if category else None,
        model_accuracy=model.right if model else None,
        empty_rate=empty / len(judged),
        category=category,
        model=model,
    )


def by_source(chunks: Sequence[Chunk], documents: Sequence[Document]) -> dict[str, dict[str, dict[str, int]]]:
    """For the category and the model apart, the chunks whose part came from each kind of evidence
    (`core.methods.chop.evidence.evidence_kind`): how many were right, wrong or unknown. A part withheld for weak
    evidence (`evidence.withheld`) is also counted, as right or wrong, under "<evidence> (not given)": what the
    extractor would have said had it trusted that evidence. The confidences of `evidence` are these counts pooled
    over every set."""
    from core.methods.chop.evidence import UNKNOWN, evidence_kind, withheld_guess

    docs = documents_by_id(documents)
    match = {"category": categories_match, "model": models_match}
    out: dict[str, dict[str, dict[str, int]]] = {"category": {}, "model": {}}
    for c in chunks:
        if (tag := CNM.of(c)) is None or not (gold := gold_of(c, docs)):
            continue
        sources = cnm_sources(c)
        for part, matches in match.items():
            if not gold.get(part):
                continue
            given, source = getattr(tag, part), sources.get(part)
            kind = evidence_kind(source) or "not said"
            counts = out[part].setdefault(kind, {"right": 0, "wrong": 0, "unknown": 0})
            verdict = "unknown" if not given else "right" if matches(gold[part], given) else "wrong"
            counts[verdict] += 1
            if kind == UNKNOWN and (guess := withheld_guess(source)):
                would = out[part].setdefault(f"{guess[0]} (not given)", {"right": 0, "wrong": 0, "unknown": 0})
                would["right" if matches(gold[part], guess[1]) else "wrong"] += 1
    return out


def copy_rate(chunks: Sequence[Chunk], documents: Sequence[Document]) -> float | None:
    """The share of tagged chunks whose model is one of the prompts' example models although their document (in
    a stream: the source document under the chunk's midpoint) never names it: copied from the prompt, not read.
    None when no chunk carries a tag."""
    docs = documents_by_id(documents)
    examples = {m.casefold(): m for m in PROMPT_EXAMPLE_MODELS}
    tagged = copied = 0
    for c in chunks:
        if (tag := CNM.of(c)) is None:
            continue
        tagged += 1
        model = (tag.model or "").strip().casefold()
        doc = docs.get(c.doc_id)
        if model in examples and doc is not None and model not in _source_text(c, doc).casefold():
            copied += 1
    return copied / tagged if tagged else None


def _source_text(chunk: Chunk, doc: Document) -> str:
    seg = doc.segment_at((chunk.start + chunk.end) // 2)
    return doc.text[seg.start:seg.end] if seg else doc.text


#: CNM accuracy's columns (the tag parts' right / wrong shares, empty tags, tags copied from the text)
ACCURACY_SHOWS = [
    FieldShow("cnm_category_accuracy", "CNM category acc", better="max", rank=20),
    FieldShow("cnm_category_wrong", "CNM category wrong", better="min", rank=21),
    FieldShow("cnm_model_accuracy", "CNM model acc", better="max", rank=22),
    FieldShow("cnm_model_wrong", "CNM model wrong", better="min", rank=23),
    FieldShow("cnm_empty_rate", "CNM empty", better="min", rank=24),
    FieldShow("cnm_copy_rate", "CNM copied", rank=25, command_line=False),
]


@register_report_fields(shows=ACCURACY_SHOWS)
def accuracy_fields(documents: Sequence[Document], run: ChunkedRun) -> dict[str, float | int | None]:
    """`cnm_category_accuracy`, `cnm_model_accuracy`, `cnm_empty_rate`, `cnm_<part>_right/_wrong/_unknown` (None
    where there are no tags or no gold) and `cnm_copy_rate` (None where there are no tags)."""
    acc = cnm_accuracy(run.chunks, documents)
    shares = {f"cnm_{part}_{kind}": getattr(getattr(acc, part), kind) if acc and getattr(acc, part) else None
              for part in ("category", "model") for kind in ("right", "wrong", "unknown")}
    return {"cnm_category_accuracy": acc.category_accuracy if acc else None,
            "cnm_model_accuracy": acc.model_accuracy if acc else None,
            "cnm_empty_rate": acc.empty_rate if acc else None,
            "cnm_judged_chunks": acc.chunks if acc else 0,
            "cnm_copy_rate": copy_rate(run.chunks, documents),
            **shares}
