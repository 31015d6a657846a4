"""Judging hits by hand, between what the app shows and what the library keeps.

The app shows chunks in corpus offsets: a document's, or a joined stream's, where one chunk may even run across
two manuals. Judgments are kept in document offsets (core.ingest.judged), so they score every chunker whether the
library is read as separate documents or as one stream. These functions translate both ways and say what each hit
of a judged question is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from core.evaluation.metrics import is_relevant
from core.evaluation.pooling import is_judged
from core.ingest.datasets import in_stream
from core.ingest.judged import JudgedQuestion, JudgedSet
from core.schema.chunks import Chunk
from core.schema.documents import Document
from core.schema.questions import Question
from core.schema.spans import Span
from core.text import sentences

Verdict = Literal["answers", "does not answer", "not judged"]


def document_spans(corpus_documents: Sequence[Document], span: Span) -> list[Span]:
    """`span` (corpus offsets) as spans of the source documents: itself for a document, its part in each
    manual for a joined stream (a chunk may cross a join). Parts that hold only the join's blank line vanish."""
    doc = next((d for d in corpus_documents if d.doc_id == span.doc_id), None)
    if doc is None or not doc.segments:
        return [span]
    out = []
    for seg in doc.segments:
        s, e = max(span.start, seg.start), min(span.end, seg.end)
        if e > s:
            out.append(Span(seg.doc_id, s - seg.start, e - seg.start))
    return out


def corpus_question(corpus_documents: Sequence[Document], judged: JudgedQuestion) -> Question:
    """A judged question in the corpus's offsets (moved into the stream when the corpus is one)."""
    q = judged.as_question()
    stream = next((d for d in corpus_documents if d.segments), None)
    return in_stream(q, stream) if stream is not None else q


def evidence_choices(chunk: Chunk) -> list[tuple[Span, str]]:
    """The sentences of a hit, each as (corpus span, its text): what a user narrows evidence to."""
    return [(Span(chunk.doc_id, chunk.start + s, chunk.start + e), chunk.text[s:e]) for s, e in sentences(chunk.text)]


def verdict(chunk: Chunk, question: Question | None, texts: dict[str, str]) -> Verdict:
    """What the judgments say about one hit (`question` in corpus offsets; `texts` the corpus's texts by id)."""
    if question is None:
        return "not judged"
    span = chunk.span
    if any(is_relevant(span, r) for r in question.references):
        return "answers"
    return "does not answer" if is_judged(span, question, texts) else "not judged"


def record_judgment(judged: JudgedSet, corpus_documents: Sequence[Document], library_documents: Sequence[Document],
                    question: str, chunk: Chunk, evidence: Sequence[Span] | None) -> JudgedQuestion:
    """Keep one judgment of a hit shown in the corpus (`evidence`: corpus spans inside it that answer, or None
    when it does not answer) in document offsets; a hit across a join is judged part by part. Returns the
    question as saved."""
    parts = document_spans(corpus_documents, chunk.span)
    found = [p for s in evidence or () for p in document_spans(corpus_documents, s)]
    saved = None
    for part in parts:
        inside = [e for e in found if e.doc_id == part.doc_id and part.start <= e.start and e.end <= part.end]
        saved = judged.record(question, part, inside if evidence else None, library_documents)
    assert saved is not None, "a hit always lies in some document"
    return saved
