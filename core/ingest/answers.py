"""What each reader job's worker answers (`core.ingest.worker.run_job`): the JSON header of its answer, typed per
job. Its own module because both sides read it: the worker's caller (`run_job`, overloaded by job) and the jobs that
write it (`core.ingest.documents`, `core.ingest.pdf`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict


class PdfTextAnswer(TypedDict):
    """What a `pdf_text` worker answers (`pdf_text_job`)."""

    text: str
    starts: list[int]
    #: (offset, level, title) each: a tuple in the worker, a list once the answer is read as JSON
    outline: Sequence[Sequence[int | str]]


class DocxTextAnswer(TypedDict):
    """What a `docx_text` worker answers (`docx_text_job`)."""

    text: str


class PageAnswer(TypedDict):
    """One drawn page in a `pdf_page` worker's answer: its `PageLayout`, and the length of its PNG, which follows
    the pages before it in the answer's bytes."""

    text: str
    boxes: Sequence[Sequence[float] | None]  # a tuple each in the worker, a list once the answer is read as JSON
    width: int
    height: int
    png: int


class PagesAnswer(TypedDict):
    """What a `pdf_page` worker answers (`page_job`)."""

    pages: list[PageAnswer]
