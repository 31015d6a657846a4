"""How right CHOP's CNM tags are, against gold tags (a QA set's `cnm` per document; see sample_data/README.md).

Over the chunks of a run that carry a CNM and lie in a document with gold tags:
- category accuracy: the share of those with a gold category whose category matches it. Categories match when
  the tag holds the gold category's words in order, case-folded, punctuation ignored ("Split Air-Conditioner"
  names an air conditioner; "conditioner" does not);
- model accuracy: the share of those with a gold model whose model matches it, by `models_match` (the rule the
  CNM filter searches with, so a tag that counts here is one the filter would find);
- empty rate: the share whose tag is empty (no category, no nouns, no model): nothing for the prefix or the
  filter to work with.
- copy rate (no gold needed): the share whose model is one of the prompts' example models that their document
  never names, i.e. copied from the prompt.
A chunk of a joined stream is judged against the gold of the source document holding its midpoint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.evaluation.fields import register_report_fields
from core.ingest.documents import Document
from core.methods.chop.cnm import CNM, PROMPT_EXAMPLE_MODELS
from core.methods.chop.rules import models_match
from core.model import Chunk
from core.pipeline import ChunkRun


@dataclass(frozen=True)
class CnmAccuracy:
    chunks: int  # tagged chunks with gold tags to compare against
    category_accuracy: float | None  # None: no gold category
    model_accuracy: float | None  # None: no gold model
    empty_rate: float


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
    docs = {d.doc_id: d for d in documents}
    judged = [(tag, gold) for c in chunks if (tag := CNM.of(c)) is not None and (gold := gold_of(c, docs))]
    if not judged:
        return None
    with_category = [(tag, gold) for tag, gold in judged if gold.get("category")]
    with_model = [(tag, gold) for tag, gold in judged if gold.get("model")]
    empty = sum(1 for tag, _ in judged if tag.is_empty())
    return CnmAccuracy(
        chunks=len(judged),
        category_accuracy=(sum(categories_match(g["category"], t.category) for t, g in with_category)
                           / len(with_category)) if with_category else None,
        model_accuracy=(sum(bool(t.model) and models_match(g["model"], t.model) for t, g in with_model)
                        / len(with_model)) if with_model else None,
        empty_rate=empty / len(judged),
    )


def copy_rate(chunks: Sequence[Chunk], documents: Sequence[Document]) -> float | None:
    """The share of tagged chunks whose model is one of the prompts' example models although their document (in
    a stream: the source document under the chunk's midpoint) never names it: copied from the prompt, not read.
    None when no chunk carries a tag."""
    docs = {d.doc_id: d for d in documents}
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


@register_report_fields
def accuracy_fields(documents: Sequence[Document], run: ChunkRun) -> dict[str, float | int | None]:
    """`cnm_category_accuracy`, `cnm_model_accuracy`, `cnm_empty_rate` (None where there are no tags or no gold)
    and `cnm_copy_rate` (None where there are no tags)."""
    acc = cnm_accuracy(run.chunks, documents)
    return {"cnm_category_accuracy": acc.category_accuracy if acc else None,
            "cnm_model_accuracy": acc.model_accuracy if acc else None,
            "cnm_empty_rate": acc.empty_rate if acc else None,
            "cnm_judged_chunks": acc.chunks if acc else 0,
            "cnm_copy_rate": copy_rate(run.chunks, documents)}
