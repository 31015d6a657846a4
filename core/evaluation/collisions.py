"""Where retrieved chunks come from, against where the answer is: the picture CHOP exists for.

Two plain-data views, drawn by the app and the HTML report (core/outputs/figures.py):
- `question_grid`: for one question, every chunker's top-k as (rank, source document, holds gold?) cells, with
  the chunker's wrong_doc@k.
- `top1_collisions`: over a QA set, for each chunker and each gold document, the share of the questions about
  that document whose top-1 hit came from another document (from the per-question sources a bench report keeps).
Sources are documents, or the segments of a joined stream (`core.evaluation.relevance.source_resolver`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evaluation.metrics import wrong_doc_at_k
from core.evaluation.relevance import SourceOf, same_document
from core.schema.spans import Span


@dataclass
class GridRow:
    chunker: str
    sources: list[str]  # the source document of each hit, best first
    gold: list[bool]  # whether that document holds one of the question's references
    wrong_doc: float  # wrong_doc@k over these hits


def question_grid(hits_by_chunker: Mapping[str, Sequence[Span]], gold_refs: Sequence[Span],
                  source_of: SourceOf = same_document) -> list[GridRow]:
    """One row per chunker: where each of its hits comes from. Without gold references, nothing is marked."""
    gold_docs = {source_of(r) for r in gold_refs}
    rows = []
    for chunker, spans in hits_by_chunker.items():
        sources = [source_of(s) for s in spans]
        wrong = wrong_doc_at_k(sources, gold_docs, len(sources)) if gold_docs else 0.0
        rows.append(GridRow(chunker, sources, [d in gold_docs for d in sources], wrong))
    return rows


def top1_sources(qids: Sequence[str], refs: Sequence[Sequence[Span]], retrieved: Sequence[Sequence[Span]],
                 source_of: SourceOf = same_document) -> list[list[str | None]]:
    """[qid, gold source, top-1 source] per question (the top-1 source is None when nothing was retrieved); kept
    per chunker in bench reports as `top1_sources`."""
    out: list[list[str | None]] = []
    for qid, qrefs, got in zip(qids, refs, retrieved):
        gold = source_of(qrefs[0]) if qrefs else None
        out.append([qid, gold, source_of(got[0]) if got else None])
    return out


def top1_collisions(report: Mapping[str, Any]) -> tuple[list[str], list[str], list[list[float | None]]]:
    """(chunkers, gold documents, share of each document's questions whose top-1 hit is from another document);
    None where a chunker's report has no per-question sources."""
    per_chunker: dict[str, dict[str, list[bool]]] = {}
    docs: dict[str, None] = {}
    for spec, result in report["results"].items():
        rows = result.get("top1_sources")
        if rows is None:
            continue
        by_doc: dict[str, list[bool]] = defaultdict(list)
        for _, gold, got in rows:
            if gold is None:
                continue
            docs.setdefault(gold)
            by_doc[gold].append(got != gold)
        per_chunker[spec] = by_doc
    doc_list = sorted(docs)
    matrix = [[(sum(by_doc[d]) / len(by_doc[d])) if by_doc.get(d) else None for d in doc_list]
              for by_doc in per_chunker.values()]
    return list(per_chunker), doc_list, matrix
